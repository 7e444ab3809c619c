"""Watching a Spark run from its driver: the Spark jobs of each stage tagged with a job group,
the stage and task counts shown on a progress display while they run (Spark's status tracker),
and the shuffle bytes each stage wrote, for the run's summary. Through Spark Connect, the jobs
are tagged with the session's tags instead and the progress comes from the server's reports
of each query; the shuffle bytes are the driver's alone to see."""

from __future__ import annotations

import threading

from neardup.engines.base import Progress
from neardup.engines.spark.session import SparkSession, is_connect

__all__ = ["GROUP_PREFIX", "RunMonitor"]

GROUP_PREFIX = "neardup:"
"""Job groups of a run's Spark jobs are ``neardup:<stage>`` (the UI and REST API show them)."""


class RunMonitor:
    """The job groups of one run, its progress while Spark runs, its shuffle bytes per stage.

    Args:
        spark: the session.
        progress: where to show the tasks of the running Spark stages (None: nowhere). A
            daemon thread polls Spark's status tracker every ``interval`` seconds while the
            monitor is entered (``with``); it shows the stage :meth:`tag` named last, with the
            tasks of the Spark stages running now (done / total).
        interval: seconds between two polls.

    Example (needs a Spark session, so not run as a doctest)::

        with RunMonitor(spark, reporter) as monitor:
            monitor.tag("read")
            docs.count()
        monitor.shuffle_written()      # {'read': 15_000_000}
    """

    def __init__(self, spark: SparkSession, progress: Progress | None = None, interval=0.5):
        self.spark = spark
        #: A Spark Connect session's monitor (see the module docstring).
        self.connect = is_connect(spark)
        self.sc = None if self.connect else spark.sparkContext
        self.progress = progress
        self.interval = float(interval)
        #: the stages tagged so far, in order
        self.stages: list[str] = []
        self._caller_group = None if self.connect else self.sc.getLocalProperty("spark.jobGroup.id")
        self._label: str | None = None
        self._first_job = self._jobs_so_far()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._shown: tuple | None = None
        self._done_shown = 0
        self._tagged: str | None = None  # the Spark Connect session's tag of this run now

    def _jobs_so_far(self) -> int | None:
        """Spark jobs submitted in the session so far (None when the driver's scheduler is not
        reachable, e.g. through Spark Connect)."""
        if self.connect:
            return None
        try:
            return int(self.sc._jsc.sc().dagScheduler().numTotalJobs())
        except Exception:  # noqa: BLE001  (a figure, not a result: unavailable is fine)
            return None

    def tag(self, stage: str | None) -> None:
        """Spark jobs started from now on (from this thread) belong to job group
        ``neardup:<stage>``; None: the caller's group again. The display keeps the stage named
        last: the Spark stages of its last job may still show as running just after that job
        returned, and would otherwise appear (and count in the summary's seconds) as a stage
        of their own. O(1)."""
        if stage is not None and stage not in self.stages:
            self.stages.append(stage)
        if self.connect:
            if self._tagged is not None:
                self.spark.removeTag(self._tagged)
            self._tagged = None if stage is None else GROUP_PREFIX + stage
            if self._tagged is not None:
                self.spark.addTag(self._tagged)
        else:
            group = self._caller_group if stage is None else GROUP_PREFIX + stage
            self.sc.setLocalProperty("spark.jobGroup.id", group)
        self._label = stage if stage is not None else self._label

    def __enter__(self) -> RunMonitor:
        if self.progress is not None and self.connect:
            self.spark.registerProgressHandler(self._reported)
        elif self.progress is not None:
            self._thread = threading.Thread(target=self._watch, name="neardup-spark", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.progress is not None and self.connect:
            self.spark.removeProgressHandler(self._reported)
        self.tag(None)

    def _reported(self, stages, inflight_tasks, operation_id, done) -> None:
        """A Spark Connect server's report on a query (its Spark stages so far): shown as
        :meth:`_watch` shows the running stages."""
        running = [s for s in stages or () if not s.done]
        try:
            self._show(
                tuple(sorted(s.stage_id for s in running)),
                sum(s.num_tasks for s in running),
                sum(s.num_completed_tasks for s in running),
            )
        except Exception:  # noqa: BLE001  (a display: the query goes on without it)
            pass

    def _show(self, stage_ids: tuple, total: int, done: int) -> None:
        """The display: the stage named last with ``done`` of the ``total`` tasks of the Spark
        stages ``stage_ids`` running now."""
        key = (self._label, stage_ids)
        if key != self._shown:
            self.progress.stage(self._label or "spark", total or None, "tasks")
            self._shown, self._done_shown = key, 0
        if done > self._done_shown:
            self.progress.advance(done - self._done_shown)
            self._done_shown = done

    def _watch(self) -> None:
        tracker = self.sc.statusTracker()
        while not self._stop.wait(self.interval):
            try:
                infos = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
                infos = [i for i in infos if i is not None]
                self._show(
                    tuple(sorted(i.stageId for i in infos)),
                    sum(i.numTasks for i in infos),
                    sum(i.numCompletedTasks for i in infos),
                )
            except Exception:  # noqa: BLE001  (a signal, a stopped session: the run decides)
                return

    def shuffle_written(self) -> dict[str, int]:
        """Shuffle bytes written by the Spark jobs of each tagged stage since the monitor
        started, by stage (a Spark stage run by one job and reused by a later one counts
        once, for the first). Empty when Spark's status store is not reachable. O(jobs +
        Spark stages) calls into the driver's JVM."""
        if self._first_job is None:
            return {}
        tracker = self.sc.statusTracker()
        store = self.sc._jsc.sc().statusStore()
        jobs = []
        for stage in self.stages:
            jobs += [
                (job, stage)
                for job in tracker.getJobIdsForGroup(GROUP_PREFIX + stage)
                if job >= self._first_job
            ]
        written = dict.fromkeys(self.stages, 0)
        counted: set[int] = set()
        for job, stage in sorted(jobs):
            info = tracker.getJobInfo(job)
            for spark_stage in info.stageIds if info is not None else ():
                if spark_stage in counted:
                    continue
                counted.add(spark_stage)
                try:
                    written[stage] += int(store.lastStageAttempt(spark_stage).shuffleWriteBytes())
                except Exception:  # noqa: BLE001  (skipped or no longer retained)
                    continue
        return written

    def figures(self, partitions: int) -> dict[str, float]:
        """The summary's ``shuffle partitions`` (``partitions``) and ``shuffle MB: <stage>``
        rows of the run (no MB when Spark's status store is not reachable), from
        :meth:`shuffle_written`."""
        written = self.shuffle_written()
        return {"shuffle partitions": partitions} | {
            f"shuffle MB: {stage}": n / 1e6 for stage, n in written.items()
        }
