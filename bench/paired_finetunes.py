"""Run: ``python bench/paired_finetunes.py [ginhunter,...]`` after the six runs of
docs/agents.md (runs/ft37_{control,hunter}_s{0,1,2}): the paired comparison of the
fine-tunes with and without ginhunter in the pool (issue 37).

Every agent plays the same 1000 duplicate matches (seed 7, the runs' final-evaluation
deals) against each opponent; per-pair differences (hunter - control, same seed, same
deals) give the paired 95% interval, pooled over the seeds."""
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from agents import make_agent
from agents.evaluation.arena import play_matches
from hgin_env.rules import load_rules

rules = load_rules("friendly")
opps = sys.argv[1].split(",") if len(sys.argv) > 1 else ["ginhunter"]
seeds = [0, 1, 2]
agents = {"pretrained": "pretrained"}
for s in seeds:
    for arm in ("control", "hunter"):
        p = Path(f"runs/ft37_{arm}_s{s}/agent_final.pt")
        if p.exists():
            agents[f"{arm}_s{s}"] = f"ckpt:{p}"
cache = Path("runs/paired_finetunes.json")
out = json.loads(cache.read_text()) if cache.exists() else {}
for opp in opps:
    for name, spec in agents.items():
        if name in out.get(opp, {}):
            continue
        t = time.time()
        st = play_matches(make_agent(spec, rules=rules), make_agent(opp, seed=7, rules=rules),
                          1000, rules, seed=7)
        won = st.a_won.astype(float)
        out.setdefault(opp, {})[name] = won.tolist()
        print(f"{opp:10s} {name:12s} {100*won.mean():5.1f}%  {time.time()-t:.0f}s", flush=True)
        cache.write_text(json.dumps(out))

def pair_means(w):  # per duplicate pair (2 games), the mean win
    return np.asarray(w).reshape(-1, 2).mean(axis=1)

for opp, res in out.items():
    print(f"\n== vs {opp}")
    for ref in ("control", "pretrained"):
        diffs = []
        for s in seeds:
            h, c = f"hunter_s{s}", (f"control_s{s}" if ref == "control" else "pretrained")
            if h in res and c in res:
                diffs.append(pair_means(res[h]) - pair_means(res[c]))
        if not diffs:
            continue
        d = np.concatenate(diffs)
        m, se = d.mean(), d.std(ddof=1) / np.sqrt(d.size)
        per_seed = [100 * x.mean() for x in diffs]
        print(f"hunter - {ref}: {100*m:+.1f} [{100*(m-1.96*se):+.1f}, {100*(m+1.96*se):+.1f}] "
              f"points over {d.size} pairs; per seed {', '.join(f'{x:+.1f}' for x in per_seed)}")
    for arm in ("control", "hunter"):
        r = [100 * np.mean(res[f'{arm}_s{s}']) for s in seeds if f'{arm}_s{s}' in res]
        if r:
            print(f"{arm}: mean {np.mean(r):.1f} (range {min(r):.1f}-{max(r):.1f}) per seed {r}")
    print(f"pretrained: {100*np.mean(res['pretrained']):.1f}")
