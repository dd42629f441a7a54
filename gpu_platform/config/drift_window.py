"""When an EKS Auto Mode pool's nodes may be replaced for drift (`pools[].aws.driftWindow`)."""

import re

from gpu_platform.config.fields import (
    DAILY_OR_WEEKLY_CRON,
    DailyOrWeeklyCron,
    HoursMinutes,
    Model,
)

DAY_MINUTES = 24 * 60
WEEK_MINUTES = 7 * DAY_MINUTES


class DriftWindow(Model):
    """A recurring window, in UTC, in which Auto Mode may start replacing the pool's drifted
    nodes, whatever drifted them (a new Auto Mode AMI, the stack's change to the pool's NodePool
    or NodeClass); outside it none is started (a drain begun inside it runs to its end). Expiry
    is not drift: a node still leaves 21 days after it started, window or not."""

    schedule: DailyOrWeeklyCron
    """When the window opens, in cron's `minute hour * * day-of-week` (UTC, day 0 is Sunday):
    `0 2 * * 6` each Saturday at 02:00, `0 2 * * *` each day at 02:00."""
    duration: HoursMinutes
    """How long the window stays open, in hours and minutes (`4h`, `90m`, `1h30m`): more than
    none and less than the day or week it recurs in."""

    @property
    def period_minutes(self) -> int:
        return DAY_MINUTES if self.schedule.endswith("*") else WEEK_MINUTES

    @property
    def duration_minutes(self) -> int:
        match = re.fullmatch(r"(?:([0-9]+)h)?(?:([0-9]+)m)?", self.duration)
        assert match is not None  # the field's pattern
        hours, minutes = match.groups()
        return int(hours or 0) * 60 + int(minutes or 0)

    def closed(self) -> tuple[str, str]:
        """The cron schedule and duration of the rest of the period: from the window's close
        until it opens again."""
        match = re.match(DAILY_OR_WEEKLY_CRON, self.schedule)
        assert match is not None  # the field's pattern
        minute, hour, day = match.groups()
        weekly = day != "*"
        start = (int(day) if weekly else 0) * DAY_MINUTES + int(hour) * 60 + int(minute)
        end = (start + self.duration_minutes) % self.period_minutes
        end_day, rest = divmod(end, DAY_MINUTES)
        closed_schedule = f"{rest % 60} {rest // 60} * * {end_day if weekly else '*'}"
        closed = self.period_minutes - self.duration_minutes
        return closed_schedule, f"{closed // 60}h{closed % 60}m"
