"""A download's progress and failures as sentences, in English or Chinese: one place for the
window and for ``tkchat models get``. Tk-free and pure."""

from __future__ import annotations

from typing import Any

from tkchat.i18n import STRINGS
from tkchat.models.download_job import Failed, Progress
from tkchat.models.finder import describe_size

SIZE_FIELDS = ("done", "size", "got", "need", "free", "total", "resumed", "rate")


def say(lang: str, key: str, **values: object) -> str:
    return STRINGS[lang][key].format(**values) if values else STRINGS[lang][key]


def describe_failure(lang: str, failed: Failed, **defaults: object) -> str:
    """The failure's one sentence. Byte counts are shown as sizes; ``defaults`` fill in what
    the child did not say (the endpoint, the file)."""
    fields: dict[str, Any] = {**defaults, **failed.fields}
    for name in SIZE_FIELDS:
        if isinstance(fields.get(name), int):
            fields[name] = describe_size(fields[name])
    fields.setdefault("done", describe_size(0))
    key = f"catalogue.error.{failed.kind}"
    if key not in STRINGS[lang]:
        key, fields = "catalogue.error.failed", {"detail": failed.kind}
    try:
        return say(lang, key, **fields)
    except (KeyError, IndexError):  # a field the child did not send: say what is known
        return say(lang, "catalogue.error.failed", detail=failed.kind)


def describe_duration(lang: str, seconds: float) -> str:
    whole = max(int(round(seconds)), 0)
    if whole < 60:
        return say(lang, "catalogue.seconds", s=whole)
    if whole < 3600:
        return say(lang, "catalogue.minutes", m=whole // 60, s=whole % 60)
    return say(lang, "catalogue.hours", h=whole // 3600, m=whole // 60 % 60)


def describe_progress(lang: str, progress: Progress, *, endpoint: str, file: str) -> str:
    """ "45 MB of 491 MB · 12 MB/s · 37 s left", or what is happening before and after."""
    if progress.phase == "starting":
        return say(lang, "catalogue.starting", endpoint=endpoint, file=file)
    total = describe_size(progress.total) if progress.total else "?"
    if progress.phase == "verify":
        return say(lang, "catalogue.verifying", done=describe_size(progress.done), total=total)
    text = say(lang, "catalogue.progress", done=describe_size(progress.done), total=total)
    if progress.resumed_from:
        text += say(
            lang, "catalogue.progress.resumed", resumed=describe_size(progress.resumed_from)
        )
    if progress.speed is not None:
        text += say(lang, "catalogue.progress.speed", speed=describe_size(int(progress.speed)))
    if progress.seconds_left is not None:
        text += say(
            lang, "catalogue.progress.left", left=describe_duration(lang, progress.seconds_left)
        )
    return text


def percent(progress: Progress) -> float | None:
    """Share of the file (0–100) already on disk, None when the size is unknown."""
    if not progress.total:
        return None
    return min(100.0, 100.0 * progress.done / progress.total)
