"""Runnable examples that wire hgin into other libraries, shipped in the wheel.

Each runs as a module once hgin is installed with its extra (from a checkout,
``pip install -e '.[sb3]'``; from a wheel, ``pip install 'hgin-<version>-py3-none-any.whl[sb3]'``):
``python -m hgin_env.examples.cleanrl_ppo`` (torch only),
``python -m hgin_env.examples.sb3_maskable_ppo`` and
``python -m hgin_env.examples.gin_rummy_v4_maskable_ppo`` (``[sb3]``),
``python -m hgin_env.examples.rllib_selfplay`` (``[rllib]``) and
``python -m hgin_env.examples.openspiel_bots`` (``[openspiel]``).  This folder is the top
layer: a client of every other, as a user's own script would be.
"""
