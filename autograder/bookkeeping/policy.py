"""The late policy: deadlines, a grace period, a penalty per day late up to a cap, and per-student extensions,
read from ``autograder/policy.toml``; and when a submission was handed in.

Everything here is pure (times in, numbers out) except :func:`load` and :func:`submission_time`, which read
files. Times are timezone-aware and compared in UTC; a deadline written without an offset is in the policy's
``timezone``.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

DAY = 86400.0
UNITS = {"score": "of the score", "max": "of the chapter's points", "points": "points"}
RULE_KEYS = {"grace_minutes", "per_day", "unit", "max_penalty", "whole_days"}
CHAPTER_KEYS = RULE_KEYS | {"deadline", "canvas_assignment_id"}
EXTENSION_KEYS = {"student", "chapter", "deadline", "days", "hours"}


class PolicyError(ValueError):
    """policy.toml cannot be used; the message says where and why, on one line."""


@dataclass(frozen=True)
class Rule:
    """How lateness costs points.

    ``per_day`` is taken off for each day late, in ``unit``: ``score`` (a fraction of what the submission
    scored), ``max`` (a fraction of the chapter's points) or ``points``; never more than ``max_penalty`` (same
    unit). A submission at most ``grace`` after its deadline is on time. With ``whole_days`` a started day
    counts as a whole one.
    """

    grace: timedelta = timedelta(0)
    per_day: float = 0.0
    unit: str = "score"
    max_penalty: float = 1.0
    whole_days: bool = True


@dataclass(frozen=True)
class Late:
    """One submission against its deadline."""

    submitted: datetime | None
    deadline: datetime | None
    days: float = 0.0  # days late, after the grace period (0 when on time)
    penalty: float = 0.0  # points taken off
    extended: bool = False
    rule: Rule = field(default_factory=Rule)

    def total(self, score: float) -> float:
        """The score after the penalty (never below 0)."""
        return round(max(0.0, score - self.penalty), 4)

    def describe(self, score: float | None = None, max_score: float | None = None) -> str:
        """One line for the feedback: submitted, deadline, days late, penalty."""
        if self.submitted is None:
            return "Submission time unknown: no late penalty."
        parts = [f"Submitted {_show(self.submitted)}"]
        if self.deadline is None:
            return parts[0] + "; no deadline set, no late penalty."
        parts.append(f"deadline {_show(self.deadline)}" + (" (extended)" if self.extended else ""))
        if self.days > 0 and self.penalty == 0 and self.rule.per_day == 0:
            parts.append(f"{self.days:g} day{'' if self.days == 1 else 's'} late; the policy sets no penalty")
        elif self.days <= 0:
            grace = f" (within the {_span(self.rule.grace)} grace period)" if self.submitted > self.deadline else ""
            parts.append(f"on time{grace}, no penalty")
        else:
            days = f"{self.days:g} day" + ("" if self.days == 1 else "s")
            rate = (f"{self.rule.per_day:g} points" if self.rule.unit == "points"
                    else f"{self.rule.per_day:.0%} {UNITS[self.rule.unit]}")
            cap = (f"{self.rule.max_penalty:g} points" if self.rule.unit == "points"
                   else f"{self.rule.max_penalty:.0%}")
            text = f"{days} late: penalty {self.penalty:g} points ({rate} per day, at most {cap})"
            if score is not None:
                text += f"; score after the penalty {self.total(score):g}"
                if max_score is not None:
                    text += f" / {max_score:g}"
            parts.append(text)
        return "; ".join(parts) + "."


def _show(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _span(delta: timedelta) -> str:
    minutes = delta.total_seconds() / 60
    return f"{minutes / 60:g} h" if minutes >= 60 and minutes % 60 == 0 else f"{minutes:g} min"


# ------------------------------------------------------------------------------------------ pure rules


def days_late(submitted: datetime | None, deadline: datetime | None, grace: timedelta = timedelta(0),
              whole_days: bool = True) -> float:
    """Days after ``deadline`` (0 when on time, within ``grace``, or when there is no deadline).

    Beyond the grace period lateness counts from the deadline itself; with ``whole_days`` a started day
    counts as a whole one.
    """
    if submitted is None or deadline is None:
        return 0.0
    late = (submitted - deadline).total_seconds()
    if late <= 0 or late <= grace.total_seconds():
        return 0.0
    days = late / DAY
    return float(math.ceil(days - 1e-9)) if whole_days else round(days, 4)


def penalty(days: float, score: float, max_score: float, rule: Rule) -> float:
    """Points taken off a submission ``days`` late that scored ``score`` of ``max_score``."""
    if days <= 0 or rule.per_day <= 0:
        return 0.0
    amount = min(days * rule.per_day, rule.max_penalty)
    base = {"score": score, "max": max_score, "points": 1.0}[rule.unit]
    return round(min(amount * base, max(score, 0.0)), 4)


# -------------------------------------------------------------------------------------------- the file


@dataclass
class Policy:
    """The parsed policy.toml (an empty one: no deadlines, no penalties)."""

    timezone: tzinfo = UTC
    rule: Rule = field(default_factory=Rule)
    deadlines: dict[str, datetime] = field(default_factory=dict)  # chapter -> deadline
    rules: dict[str, Rule] = field(default_factory=dict)  # chapter -> its rule, when it has its own
    canvas_ids: dict[str, str] = field(default_factory=dict)  # chapter -> Canvas assignment id
    extensions: dict[tuple[str, str], datetime | timedelta] = field(default_factory=dict)
    named_here: int = 0  # extensions written in this file (policy.toml is committed: they belong beside the roster)

    def rule_for(self, chapter: str) -> Rule:
        return self.rules.get(chapter, self.rule)

    def deadline_for(self, student: str, chapter: str) -> tuple[datetime | None, bool]:
        """The student's deadline for the chapter, and whether an extension set it."""
        base = self.deadlines.get(chapter)
        ext = self.extensions.get((student, chapter))
        if isinstance(ext, datetime):
            return ext, True
        if isinstance(ext, timedelta) and base is not None:
            return base + ext, True
        return base, False

    def assess(self, student: str, chapter: str, submitted: datetime | None, score: float,
               max_score: float) -> Late:
        """How late the submission was and what it costs."""
        deadline, extended = self.deadline_for(student, chapter)
        rule = self.rule_for(chapter)
        days = days_late(submitted, deadline, rule.grace, rule.whole_days)
        return Late(submitted, deadline, days, penalty(days, score, max_score, rule), extended, rule)


def load(path: Path, chapters: list[str] | None = None) -> Policy:
    """Read ``path`` (a missing file is an empty policy). ``chapters``, when given, are the only chapter
    names a deadline or an extension may name. Raises :class:`PolicyError`."""
    if not path.exists():
        return Policy()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise PolicyError(f"{path}: not valid TOML: {err}") from None
    return parse(data, chapters, where=str(path))


def parse(data: dict, chapters: list[str] | None = None, where: str = "policy.toml") -> Policy:
    """The policy from the TOML document ``data`` (see policy.toml for the settings)."""
    unknown = set(data) - {"timezone", "late", "chapters", "extensions"}
    if unknown:
        raise PolicyError(f"{where}: unknown setting {sorted(unknown)[0]!r} "
                          "(known: timezone, [late], [chapters.<chapter>], [[extensions]])")
    try:
        tz: tzinfo = ZoneInfo(str(data.get("timezone", "UTC")))
    except (ZoneInfoNotFoundError, ValueError):
        raise PolicyError(f"{where}: unknown timezone {data.get('timezone')!r} (e.g. 'Europe/Berlin', 'UTC')") \
            from None
    policy = Policy(timezone=tz)
    policy.rule = _rule(_table(data, "late", where), Rule(), f"{where} [late]", RULE_KEYS)
    for chapter, table in _table(data, "chapters", where).items():
        at = f"{where} [chapters.{chapter}]"
        if not isinstance(table, dict):
            raise PolicyError(f"{at}: expected a table of settings")
        _known_chapter(chapter, chapters, at)
        if "deadline" in table:
            policy.deadlines[chapter] = _when(table["deadline"], tz, f"{at} deadline")
        if "canvas_assignment_id" in table:
            policy.canvas_ids[chapter] = str(table["canvas_assignment_id"]).strip()
        if set(table) & RULE_KEYS:
            policy.rules[chapter] = _rule(table, policy.rule, at, CHAPTER_KEYS)
        elif set(table) - CHAPTER_KEYS:
            _rule(table, policy.rule, at, CHAPTER_KEYS)  # reports the unknown key
    _extensions(data.get("extensions", []), policy, chapters, where, tz)
    policy.named_here = len(policy.extensions)
    return policy


def _extensions(extensions: object, policy: Policy, chapters: list[str] | None, where: str, tz: tzinfo) -> None:
    """``[[extensions]]`` tables of ``where`` added to ``policy.extensions``."""
    if not isinstance(extensions, list):
        raise PolicyError(f"{where}: extensions must be written [[extensions]] (a list of tables)")
    for i, ext in enumerate(extensions, 1):
        at = f"{where} extension {i}"
        if not isinstance(ext, dict):
            raise PolicyError(f"{at}: expected a table")
        if set(ext) - EXTENSION_KEYS:
            raise PolicyError(f"{at}: unknown setting {sorted(set(ext) - EXTENSION_KEYS)[0]!r} "
                              f"(known: {', '.join(sorted(EXTENSION_KEYS))})")
        student, chapter = str(ext.get("student", "")).strip(), str(ext.get("chapter", "")).strip()
        if not student or not chapter:
            raise PolicyError(f"{at}: needs both a student and a chapter")
        _known_chapter(chapter, chapters, at)
        given = [k for k in ("deadline", "days", "hours") if k in ext]
        if len(given) != 1:
            raise PolicyError(f"{at} ({student}, {chapter}): give exactly one of deadline, days or hours")
        if (student, chapter) in policy.extensions:
            raise PolicyError(f"{at}: a second extension for {student} in {chapter}")
        if given[0] == "deadline":
            policy.extensions[student, chapter] = _when(ext["deadline"], tz, f"{at} deadline")
        else:
            amount = _number(ext[given[0]], f"{at} {given[0]}", minimum=0)
            policy.extensions[student, chapter] = timedelta(**{given[0]: amount})


def load_extensions(path: Path, policy: Policy, chapters: list[str] | None = None) -> int:
    """Add the ``[[extensions]]`` of ``path`` (``extensions.toml`` beside the roster: student ids stay out of the
    repository) to ``policy``; a missing file adds none. Returns how many it added. Raises :class:`PolicyError`."""
    if not path.exists():
        return 0
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise PolicyError(f"{path}: not valid TOML: {err}") from None
    unknown = set(data) - {"extensions"}
    if unknown:
        raise PolicyError(f"{path}: unknown setting {sorted(unknown)[0]!r} (this file holds [[extensions]] only; "
                          "deadlines and rules are in policy.toml)")
    before = len(policy.extensions)
    _extensions(data.get("extensions", []), policy, chapters, str(path), policy.timezone)
    return len(policy.extensions) - before


def load_all(path: Path, extensions: Path | None, chapters: list[str] | None = None) -> Policy:
    """:func:`load` of ``path`` with :func:`load_extensions` of ``extensions`` (when given)."""
    found = load(path, chapters)
    if extensions is not None:
        load_extensions(extensions, found, chapters)
    return found


def _table(data: dict, key: str, where: str) -> dict:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise PolicyError(f"{where}: {key} must be a table ([{key}])")
    return value


def _known_chapter(chapter: str, chapters: list[str] | None, at: str) -> None:
    if chapters is not None and chapter not in chapters:
        raise PolicyError(f"{at}: no chapter {chapter!r} (chapters: {', '.join(chapters)})")


def _number(value: object, at: str, minimum: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PolicyError(f"{at}: expected a number, got {value!r}")
    if minimum is not None and value < minimum:
        raise PolicyError(f"{at}: must be at least {minimum:g}, got {value!r}")
    return float(value)


def _rule(table: dict, base: Rule, at: str, allowed: set[str]) -> Rule:
    unknown = set(table) - allowed
    if unknown:
        raise PolicyError(f"{at}: unknown setting {sorted(unknown)[0]!r} (known: {', '.join(sorted(allowed))})")
    changes: dict = {}
    if "grace_minutes" in table:
        changes["grace"] = timedelta(minutes=_number(table["grace_minutes"], f"{at} grace_minutes", 0))
    if "per_day" in table:
        changes["per_day"] = _number(table["per_day"], f"{at} per_day", 0)
    if "max_penalty" in table:
        changes["max_penalty"] = _number(table["max_penalty"], f"{at} max_penalty", 0)
    if "unit" in table:
        if table["unit"] not in UNITS:
            raise PolicyError(f"{at}: unit must be one of {', '.join(map(repr, UNITS))}, got {table['unit']!r}")
        changes["unit"] = table["unit"]
    if "whole_days" in table:
        if not isinstance(table["whole_days"], bool):
            raise PolicyError(f"{at}: whole_days must be true or false")
        changes["whole_days"] = table["whole_days"]
    rule = replace(base, **changes)
    if rule.unit != "points" and (rule.per_day > 1 or rule.max_penalty > 1):
        raise PolicyError(f"{at}: with unit {rule.unit!r}, per_day and max_penalty are fractions (0.1 = 10 %)")
    return rule


def _when(value: object, tz: tzinfo, at: str) -> datetime:
    """A TOML date-time (with or without offset), a date (the end of that day) or an ISO string, in UTC."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            raise PolicyError(f"{at}: not a date and time: {value!r} (write 2026-10-12T23:59:00)") from None
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=tz)).astimezone(UTC)
    if isinstance(value, date):  # a whole day: on time until midnight at its end
        return datetime.combine(value + timedelta(days=1), time(0), tz).astimezone(UTC)
    raise PolicyError(f"{at}: expected a date and time (2026-10-12T23:59:00), got {value!r}")


# --------------------------------------------------------------------------------- when it was handed in

# A date and time in a file name, as LMS downloads write them (Blackboard: ..._attempt_2026-10-12-23-59-01_...).
NAME_TIME = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})[-_T ](\d{2})[-:.](\d{2})(?:[-:.](\d{2}))?(?!\d)")


def time_in_name(name: str, tz: tzinfo = UTC) -> datetime | None:
    """The date and time a file name carries (read in ``tz``), if any."""
    m = NAME_TIME.search(name)
    if m is None:
        return None
    try:
        y, mo, d, h, mi = (int(g) for g in m.groups()[:5])
        return datetime(y, mo, d, h, mi, int(m.group(6) or 0), tzinfo=tz).astimezone(UTC)
    except ValueError:
        return None


def parse_timestamp(text: str) -> datetime:
    """A submission's timestamp.txt, in UTC: nbgrader's exchange writes "2026-10-12 21:59:01.123456 UTC" (its
    format "%Y-%m-%d %H:%M:%S.%f %Z"); a zone name ("Europe/Berlin"), a numeric offset ("+0200") or an ISO time
    are read too. A time without a zone is UTC."""
    import dateutil.parser
    import dateutil.tz

    parts = text.split()
    zone = None
    if len(parts) == 3 and re.fullmatch(r"[A-Za-z][A-Za-z_/+-]*", parts[2]):  # a zone's name, not an offset
        zone = dateutil.tz.gettz(parts[2])
        if zone is None:
            raise ValueError(f"unknown time zone {parts[2]!r}")
        parts = parts[:2]
    if not parts:
        raise ValueError("empty")
    when = dateutil.parser.parse(" ".join(parts))
    return (when if when.tzinfo else when.replace(tzinfo=zone or UTC)).astimezone(UTC)


def submission_time(folder: Path, notebook: Path | None = None, tz: tzinfo = UTC) -> tuple[datetime, str]:
    """When the submission in ``folder`` was handed in, and where that came from: the ``timestamp.txt`` that
    nbgrader's exchange writes, else a time in an LMS download's file name, else the notebook's
    modification time."""
    stamp = folder / "timestamp.txt"
    problem = ""
    if stamp.is_file():
        try:
            return parse_timestamp(stamp.read_text(errors="replace")), "timestamp.txt"
        except (ValueError, OverflowError) as err:
            problem = f" (timestamp.txt unreadable: {err})"
    names = ([notebook.name] if notebook is not None else []) + sorted(p.name for p in folder.iterdir())
    for name in names:
        found = time_in_name(name, tz)
        if found is not None:
            return found, f"file name {name}{problem}"
    target = notebook if notebook is not None and notebook.exists() else folder
    return datetime.fromtimestamp(target.stat().st_mtime, UTC), f"modification time of {target.name}{problem}"
