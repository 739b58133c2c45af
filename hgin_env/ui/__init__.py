"""What people see: the table as text (:mod:`.render`) and as an image (:mod:`.image`),
the move language of the terminal and the browser (:mod:`.moves`), positions as text
for external programs (:mod:`.text`), and the pieces every web page shares
(:mod:`.webpage` with its templates, style sheet and script).

Reads games through the engine's public attributes; knows nothing of environments,
records or servers.
"""
