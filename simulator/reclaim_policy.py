"""The simulated fleet's own reclaimer: policies the demo adds to its config, all in shadow mode.

The demo month then shows what reclaiming would have recovered (the review's "reclaimed this month"
section) without warning anyone or acting on anything. The policies are issue 24's examples:
notebooks idle for 2 hours while other jobs wait are cancelled an hour after the warning; training
with no activity for an hour is requeued an hour after the warning; inference replicas beyond the
first with no traffic for an hour are scaled away.
"""

from __future__ import annotations

SHADOW_POLICIES = """
# The simulated fleet's reclaimer (issue 24), in shadow mode: recorded, never sent or done.
[[reclaim.policies]]
name = "idle-notebooks"
scenario = "interactive"
when = "idle_while_waiting"
idle_for = "2h"
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
