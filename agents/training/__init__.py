"""Training: the self-play PPO trainer (:mod:`.ppo`), its rollout collection
(:mod:`.rollout`) and its configuration files (:mod:`.config`, shipped ones in
``configs/``).
"""
