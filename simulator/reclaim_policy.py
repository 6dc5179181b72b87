"""The simulated fleet's own reclaimer: policies the demo adds to its config, all in shadow mode.

The demo month then shows what reclaiming would have recovered (the review's "reclaimed this month"
section) without warning anyone or acting on anything. The policies are what a site running the
reference tools would configure, with their defaults, not figures fitted to the simulated month
(docs/reclaim.md, "The demo's shadow reclaimer"):
- notebooks: Princeton's job_defense_shield `cancel-zero-gpu-jobs` example (run from cron every 15
  minutes: first warning after 60 minutes idle, cancelled at 120) and Zero to JupyterHub's idle culler
  (`cull.timeout: 3600`): warned after an hour idle, cancelled an hour later, whether or not others
  wait (neither tool asks). Cancelled at two hours idle is also the example config's own interactive
  `idle_limit`, so the reclaimer enforces the limit the review measures;
- training with no activity for an hour is warned and requeued an hour later (job_defense_shield's
  timing; requeued, not cancelled, so a checkpointed run resumes);
- inference replicas beyond the first with no traffic for an hour are scaled away.
"""

from __future__ import annotations

SHADOW_POLICIES = """
# The simulated fleet's reclaimer (issue 24), in shadow mode: recorded, never sent or done.
[[reclaim.policies]]
name = "idle-notebooks"
scenario = "interactive"
when = "idle"
idle_for = "1h"
grace = "1h"
action = "cancel"
mode = "shadow"

[[reclaim.policies]]
name = "stuck-training"
scenario = "training"
when = "idle"
idle_for = "1h"
grace = "1h"
action = "requeue"
mode = "shadow"

[[reclaim.policies]]
name = "quiet-inference"
scenario = "online_inference"
when = "no_traffic"
idle_for = "1h"
grace = "1h"
action = "scale"
min_replicas = 1
mode = "shadow"
"""
