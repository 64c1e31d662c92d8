"""How often TrainingState writes last.pt between epoch ends, as dl-train's --checkpoint-every
(trainer/train/resume/checkpoint_every.h): a number of steps ("500"), a time ("30s", "10m",
"1.5h"), or "0" for epoch ends only. A kill -9 or a lost node then loses at most that much.
"""

import re

from dl_plan.errors import PlanError

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}
EXPECTED = "expected a number of steps (500), a time (30s, 10m, 2h) or 0 for epoch ends only"


class CheckpointEvery:
    """`steps` (0: not by steps) or `seconds` (0: not by time), as parse() read them."""

    def __init__(self, steps=0, seconds=0.0):
        self.steps, self.seconds = steps, seconds

    def enabled(self):
        return self.steps > 0 or self.seconds > 0

    def due(self, global_step, seconds_since_last):
        """After `global_step` (counted over the whole run, so the points do not move when a run
        resumes), given the seconds since the last write."""
        if self.steps > 0 and global_step > 0 and global_step % self.steps == 0:
            return True
        return self.seconds > 0 and seconds_since_last >= self.seconds


def parse(text, source="checkpoint-every"):
    """CheckpointEvery from `text` (an int is a number of steps); PlanError (exit 64, naming
    `source`) for anything else."""
    raw = "" if isinstance(text, bool) else str(text).strip()
    if re.fullmatch(r"[0-9]+", raw) and int(raw) <= 1 << 62:
        return CheckpointEvery(steps=int(raw))
    # Digits and at most one point, then the unit: float() would also take "inf" or "1e9".
    m = re.fullmatch(r"([0-9]*\.?[0-9]*)([smh])", raw)
    if m and m.group(1) not in ("", "."):
        seconds = float(m.group(1)) * _UNITS[m.group(2)]
        if seconds <= 366 * 86400:
            return CheckpointEvery(seconds=seconds)
    raise PlanError(f"{source}: {text!r} is not an interval; {EXPECTED}", 64)
