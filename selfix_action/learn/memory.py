"""The memory of past fixes: a small SQLite file of failure signatures and the repairs that worked or failed.

Filled after every ``selfix fix`` run (from its trace); read at the start of the next one:

- the LLM Detective gets the most similar past cases in its prompt ("Similar past fixes"), by failure
  similarity (see ``engine.fingerprint.similarity``: 1.0 same fingerprint, 0.7 same exception and message
  shape, 0.4 same exception and project frame, 0.25 same exception);
- the offline engine boosts, within a line (or lines localized exactly as well, ``offline.ordering``), the
  repair templates that fixed a failure *at the same place*: ``boosts_for``.

A boost needs specific evidence. Measured on the benchmark (``docs/LEARNING.md``), boosting by failure
similarity alone (exception type and message shape match most assertion failures) pushed templates that fixed
unrelated bugs ahead of the right one. So a past repair counts for a hypothesis only through::

    evidence = 1.0 same failure fingerprint and same function | 0.6 same function | 0.5 same fingerprint,
               another function | 0.25 same file, another function                (else it does not count)
    w_i      = evidence_i * 0.5 ** (age_i / half_life) * (MISLED_WEIGHT if it was boosted and did not fix)
    score    = (sum w_i * success_i + PRIOR_WEIGHT * PRIOR) / (sum w_i + PRIOR_WEIGHT)

and a template is boosted when its score exceeds ``BOOST_MIN``. By default only the strongest evidence counts
(``MIN_EVIDENCE``: the same failure at the same function, calibrated on held-out benchmark data); weaker levels
are there for ``min_evidence`` and the evaluation. One fix at the same function and failure
moves a template from the prior 0.1 to 0.4; a boost that was tried and did not lead to the fix counts
``MISLED_WEIGHT`` times, so one or two misses take the boost away.

Concurrency: WAL journal, a busy timeout, and writes in ``BEGIN IMMEDIATE`` transactions retried with
backoff, so two runs sharing one file both record. A file that is not a readable database is renamed to
``<name>.corrupt-<time>`` with a warning and a fresh one is started; any other failure disables the memory for
this run with a warning. The memory never makes a run fail.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from selfix_action.learn.runs import RunRecord
from selfix_action.repair.fingerprint import FailureSignature, similarity

PRIOR = 0.1
PRIOR_WEIGHT = 2.0
HALF_LIFE_DAYS = 30.0
MIN_SIMILARITY = 0.25
WRITE_RETRIES = 8
MEMORY_SCHEMA = 2
BOOST_MIN = 0.15
MISLED_WEIGHT = 4.0
# Evidence that a past repair speaks for this hypothesis (see the module docstring).
EVIDENCE_SAME_FAILURE_AND_FUNCTION = 1.0
EVIDENCE_SAME_FUNCTION = 0.6
EVIDENCE_SAME_FAILURE = 0.5
EVIDENCE_SAME_FILE = 0.25
# The weakest evidence that counts, calibrated on the benchmark by project (docs/LEARNING.md): chosen on one
# library's tasks (its memory growing task by task), it was the strictest level in both folds.
MIN_EVIDENCE = EVIDENCE_SAME_FAILURE_AND_FUNCTION
MAX_DIFF_CHARS = 1200

Warn = Callable[[str], None]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS cases (
    run_id TEXT PRIMARY KEY, t REAL, repo TEXT, engine TEXT, healed INTEGER, candidates INTEGER,
    fingerprint TEXT, exc_type TEXT, message_shape TEXT, frame TEXT,
    template TEXT, description TEXT, diff TEXT
);
CREATE TABLE IF NOT EXISTS outcomes (
    run_id TEXT, t REAL, fingerprint TEXT, exc_type TEXT, message_shape TEXT, frame TEXT,
    template TEXT, success INTEGER, attempts INTEGER,
    PRIMARY KEY (run_id, fingerprint, template)
);
CREATE TABLE IF NOT EXISTS repairs (
    run_id TEXT, t REAL, fingerprints TEXT, file TEXT, symbol TEXT, template TEXT,
    success INTEGER, boosted INTEGER, attempts INTEGER,
    PRIMARY KEY (run_id, file, symbol, template)
);
CREATE INDEX IF NOT EXISTS repairs_file ON repairs (file);
CREATE INDEX IF NOT EXISTS outcomes_exc ON outcomes (exc_type);
CREATE INDEX IF NOT EXISTS cases_exc ON cases (exc_type);
"""


class PastCase(BaseModel):
    similarity: float
    age_days: float
    repo: str
    healed: bool
    candidates: int
    signature: FailureSignature
    template: str
    description: str
    diff: str


def _decay(age_seconds: float, half_life_days: float) -> float:
    return 0.5 ** (max(0.0, age_seconds) / 86400.0 / half_life_days)


class Memory:
    def __init__(
        self,
        path: str | Path,
        *,
        half_life_days: float = HALF_LIFE_DAYS,
        min_evidence: float = MIN_EVIDENCE,
        warn: Warn | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path)
        self.half_life_days = half_life_days
        self.min_evidence = min_evidence  # the weakest evidence that counts for a boost
        self.clock = clock
        self.warnings: list[str] = []
        self._warn_to = warn
        self.db: sqlite3.Connection | None = None
        self._open()

    # -- opening, corruption, retries -------------------------------------------------------------------
    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        if self._warn_to is not None:
            self._warn_to(message)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA busy_timeout = 10000")
        mode = db.execute("PRAGMA journal_mode = WAL").fetchone()
        if mode is None or str(mode[0]).lower() != "wal":
            raise sqlite3.DatabaseError(f"cannot switch to WAL journal (got {mode})")
        check = db.execute("PRAGMA quick_check").fetchone()
        if check is None or check[0] != "ok":
            raise sqlite3.DatabaseError(f"integrity check failed: {check}")
        self._write(db, lambda c: c.executescript(_SCHEMA) and None, script=True)
        self._write(db, lambda c: c.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(MEMORY_SCHEMA),)))
        return db

    def _open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self._warn(f"memory disabled: cannot create {self.path.parent}: {exc}")
            return
        try:
            self.db = self._connect()
            return
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                self._warn(f"memory disabled for this run: {self.path} stays locked ({exc})")
                return
            problem: Exception = exc
        except sqlite3.DatabaseError as exc:
            problem = exc
        aside = self.path.with_name(f"{self.path.name}.corrupt-{int(self.clock())}")
        try:
            os.replace(self.path, aside)
            for suffix in ("-wal", "-shm"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)
            self._warn(f"memory {self.path} is unreadable ({problem}); set aside as {aside.name}, starting afresh")
            self.db = self._connect()
        except (OSError, sqlite3.Error) as exc:
            self.db = None
            self._warn(f"memory disabled for this run: {self.path}: {exc}")

    def _write(
        self, db: sqlite3.Connection, action: Callable[[sqlite3.Connection], object], script: bool = False
    ) -> None:
        delay = 0.05
        for attempt in range(WRITE_RETRIES):
            try:
                if script:
                    action(db)  # executescript commits on its own
                    return
                db.execute("BEGIN IMMEDIATE")
                try:
                    action(db)
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
                return
            except sqlite3.OperationalError as exc:
                if ("locked" not in str(exc) and "busy" not in str(exc)) or attempt == WRITE_RETRIES - 1:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 1.0)

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None

    # -- writing ----------------------------------------------------------------------------------------
    def record(self, run: RunRecord, diff: str = "", description: str = "") -> bool:
        """Store what one run learned: per failure signature, each template tried and whether it fixed it."""
        if self.db is None or not run.signatures:
            return False
        now = self.clock()
        fixed_by = run.patch_template if run.healed else ""
        attempts: dict[str, int] = {}
        for h in run.hypotheses:
            for attempt in h.attempts:
                if attempt.template:
                    attempts[attempt.template] = attempts.get(attempt.template, 0) + 1
        first = run.signatures[0]
        winner = next((a for h in run.hypotheses for a in h.attempts if a.ok and h.fixed), None)
        fingerprints = " ".join(sorted({s.fingerprint for s in run.signatures}))
        repairs = []
        for h in run.hypotheses:
            boosted = set(run.boosted.get(h.id, ()))
            tried: dict[str, int] = {}
            for attempt in h.attempts:
                if attempt.template:
                    tried[attempt.template] = tried.get(attempt.template, 0) + 1
            fixed_here = h.fixed and run.healed
            for template, count in sorted(tried.items()):
                success = int(fixed_here and template == fixed_by)
                repairs.append(
                    (
                        run.run_id,
                        now,
                        fingerprints,
                        h.file,
                        h.symbol,
                        template,
                        success,
                        int(template in boosted),
                        count,
                    )
                )
        rows = [
            (run.run_id, now, s.fingerprint, s.exc_type, s.message_shape, s.frame, t, int(t == fixed_by), n)
            for s in {s.fingerprint: s for s in run.signatures}.values()
            for t, n in sorted(attempts.items())
        ]

        def write(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT OR REPLACE INTO cases VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    run.run_id,
                    now,
                    run.repo,
                    run.engine,
                    int(run.healed),
                    run.candidates,
                    first.fingerprint,
                    first.exc_type,
                    first.message_shape,
                    first.frame,
                    fixed_by,
                    description or (winner.description if winner else ""),
                    diff[:MAX_DIFF_CHARS],
                ),
            )
            db.executemany("INSERT OR REPLACE INTO outcomes VALUES (?,?,?,?,?,?,?,?,?)", rows)
            db.executemany("INSERT OR REPLACE INTO repairs VALUES (?,?,?,?,?,?,?,?,?)", repairs)

        try:
            self._write(self.db, write)
            return True
        except sqlite3.Error as exc:
            self._warn(f"memory: could not record this run: {exc}")
            return False

    # -- reading ----------------------------------------------------------------------------------------
    def _rows(self, query: str, exc_types: Iterable[str]) -> list[tuple[Any, ...]]:  # SQLite's values
        if self.db is None:
            return []
        types = sorted(set(exc_types))
        if not types:
            return []
        marks = ",".join("?" * len(types))
        try:
            return list(self.db.execute(query.format(marks=marks), types))
        except sqlite3.Error as exc:
            self._warn(f"memory: could not read: {exc}")
            return []

    @staticmethod
    def _best_similarity(sig: FailureSignature, signatures: Sequence[FailureSignature]) -> float:
        return max((similarity(sig, s) for s in signatures), default=0.0)

    def template_scores(self, signatures: Sequence[FailureSignature]) -> dict[str, float]:
        """Smoothed, decayed success rate per template for failures like ``signatures`` (only templates seen)."""
        now = self.clock()
        hits: dict[str, float] = {}
        weights: dict[str, float] = {}
        rows = self._rows(
            "SELECT run_id, t, fingerprint, exc_type, message_shape, frame, template, success FROM outcomes "
            "WHERE exc_type IN ({marks})",
            (s.exc_type for s in signatures),
        )
        best: dict[tuple[str, str], tuple[float, int]] = {}  # (template, run) -> best weight, success
        for run_id, t, fp, exc, shape, frame, template, success in rows:
            sig = FailureSignature(exc_type=str(exc), message_shape=str(shape), frame=str(frame), fingerprint=str(fp))
            sim = self._best_similarity(sig, signatures)
            if sim < MIN_SIMILARITY:
                continue
            w = sim * _decay(now - float(t), self.half_life_days)
            key = (str(template), str(run_id))
            if key not in best or best[key][0] < w:
                best[key] = (w, int(success))
        for (template, _), (w, success) in best.items():
            weights[template] = weights.get(template, 0.0) + w
            hits[template] = hits.get(template, 0.0) + w * success
        return {t: round((hits[t] + PRIOR_WEIGHT * PRIOR) / (weights[t] + PRIOR_WEIGHT), 6) for t in sorted(weights)}

    def repair_scores(self, signatures: Sequence[FailureSignature], file: str, symbol: str) -> dict[str, float]:
        """Smoothed, decayed success rate per template for a hypothesis at ``file``/``symbol``, from past repairs
        with specific evidence only (same fingerprint, function or file; see the module docstring)."""
        if self.db is None:
            return {}
        current = {s.fingerprint for s in signatures}
        marks = " OR ".join("instr(fingerprints, ?) > 0" for _ in current)
        query = (
            "SELECT run_id, t, fingerprints, file, symbol, template, success, boosted FROM repairs WHERE file = ?"
            + (f" OR {marks}" if marks else "")
        )
        try:
            rows = list(self.db.execute(query, [file, *sorted(current)]))
        except sqlite3.Error as exc:
            self._warn(f"memory: could not read: {exc}")
            return {}
        now = self.clock()
        hits: dict[str, float] = {}
        weights: dict[str, float] = {}
        for _run, t, fps, r_file, r_symbol, template, success, boosted in rows:
            same_failure = bool(current & set(str(fps).split()))
            same_function = r_file == file and r_symbol == symbol
            if same_failure and same_function:
                evidence = EVIDENCE_SAME_FAILURE_AND_FUNCTION
            elif same_function:
                evidence = EVIDENCE_SAME_FUNCTION
            elif same_failure:
                evidence = EVIDENCE_SAME_FAILURE
            elif r_file == file:
                evidence = EVIDENCE_SAME_FILE
            else:
                continue
            if evidence < self.min_evidence:
                continue
            w = evidence * _decay(now - float(t), self.half_life_days)
            if boosted and not success:
                w *= MISLED_WEIGHT  # it was pushed ahead and did not fix: forget it fast
            key = str(template)
            weights[key] = weights.get(key, 0.0) + w
            hits[key] = hits.get(key, 0.0) + w * int(success)
        return {t: round((hits[t] + PRIOR_WEIGHT * PRIOR) / (weights[t] + PRIOR_WEIGHT), 6) for t in sorted(weights)}

    def boosts_for(self, signatures: Sequence[FailureSignature], file: str, symbol: str) -> dict[str, float]:
        """The offline engine's boosts for a hypothesis at ``file``/``symbol``: template -> score above
        ``BOOST_MIN``."""
        return {t: s for t, s in self.repair_scores(signatures, file, symbol).items() if s > BOOST_MIN}

    def boosted_templates(self, signatures: Sequence[FailureSignature]) -> dict[str, float]:
        """Templates that did better than the prior on similar failures: template -> score. For the Detective's
        prompt (it weighs them itself); the offline engine's boosts come from ``boosts_for``."""
        return {t: s for t, s in self.template_scores(signatures).items() if s > PRIOR}

    def similar_cases(self, signatures: Sequence[FailureSignature], limit: int = 5) -> list[PastCase]:
        now = self.clock()
        rows = self._rows(
            "SELECT t, repo, healed, candidates, fingerprint, exc_type, message_shape, frame, template, "
            "description, diff FROM cases WHERE exc_type IN ({marks})",
            (s.exc_type for s in signatures),
        )
        cases = []
        for t, repo, healed, candidates, fp, exc, shape, frame, template, description, diff in rows:
            sig = FailureSignature(exc_type=str(exc), message_shape=str(shape), frame=str(frame), fingerprint=str(fp))
            sim = self._best_similarity(sig, signatures)
            if sim < MIN_SIMILARITY:
                continue
            cases.append(
                PastCase(
                    similarity=sim,
                    age_days=round((now - float(t)) / 86400.0, 2),
                    repo=str(repo),
                    healed=bool(healed),
                    candidates=int(candidates),
                    signature=sig,
                    template=str(template or ""),
                    description=str(description or ""),
                    diff=str(diff or ""),
                )
            )
        cases.sort(key=lambda c: (-c.healed, -c.similarity, c.age_days, c.template))
        return cases[:limit]

    def prompt_section(self, signatures: Sequence[FailureSignature], limit: int = 3) -> str:
        """The Detective's "Similar past fixes" text: cases, what fixed them, and template scores."""
        cases = self.similar_cases(signatures, limit)
        if not cases:
            return ""
        out = []
        for case in cases:
            where = f" at {case.signature.frame}" if case.signature.frame else ""
            head = (
                f"- similarity {case.similarity:.2f}, {case.age_days:g} days ago: {case.signature.exc_type} "
                f"`{case.signature.message_shape}`{where}: "
            )
            if case.healed:
                out.append(head + f"fixed by {case.template} ({case.description})")
                if case.diff:
                    out += ["  ```diff", *[f"  {line}" for line in case.diff.strip().splitlines()[:20]], "  ```"]
            else:
                out.append(head + "not healed")
        scores = self.boosted_templates(signatures)
        if scores:
            ranked = ", ".join(f"{t} {s:.2f}" for t, s in sorted(scores.items(), key=lambda kv: -kv[1]))
            out.append(f"Repair kinds that fixed similar failures (smoothed success rate): {ranked}")
        return "\n".join(out)


def signatures_from(items: Iterable[Mapping[str, object] | FailureSignature]) -> list[FailureSignature]:
    return [i if isinstance(i, FailureSignature) else FailureSignature.model_validate(i) for i in items]
