# An Ansible callback that reports how far a playbook is, as it runs.
#
# kubespray's cluster.yml runs for up to an hour; without this, Argo's UI shows a spinning node
# and the CR a step count that does not move. The plugin counts plays, not tasks: a playbook's
# plays are known when it starts (import_playbook is resolved at load time), while its tasks are
# not (include_tasks and include_role are resolved as the run goes, and most of kubespray's are
# skipped by a condition). It reports two ways:
#
# - Argo's progress file ($ARGO_PROGRESS_FILE, set by Argo in every step's container): "done/total"
#   plays, which Argo's executor reads and the Workflow's progress sums. A script that runs a
#   playbook only to prepare the run (facts.yml before a limited run) empties the variable, so the
#   step's progress never goes back.
# - One line on the step's log, "bpa-progress: " then JSON, read by the controller for the CR's
#   status: the playbook, plays done of plays, the current play and task, the tasks started, and
#   the hosts failed or unreachable so far. The line is written when a play starts, when a host
#   fails or cannot be reached, at the end, and for a task that is still running LONG_TASK seconds
#   after it started. Most of kubespray's tasks are skipped or take a second, and their results
#   are hidden (display_skipped_hosts = no): a line for each would bury the log operators read.
#
# Nothing here may contain two opening braces in a row: Argo would read them as its own
# template in the step's raw artifact.
from __future__ import annotations

DOCUMENTATION = """
    name: bpa_progress
    type: aggregate
    short_description: reports the plays done of a playbook's plays, and its current task
    description:
      - Writes "done/total" plays to Argo's progress file and a "bpa-progress:" JSON line to the
        output when a play starts, a host fails, a task runs long, and at the end.
"""

import json
import os
import threading
import time

from ansible.plugins.callback import CallbackBase

# Seconds a task runs before its line is written.
LONG_TASK = 5
# The longest name reported: a task's name may be templated into something long.
NAME_CHARS = 200
PREFIX = "bpa-progress: "


def _rescued(task):
    """Whether a block around the task has a rescue."""
    parent = getattr(task, "_parent", None)
    while parent is not None:
        if getattr(parent, "rescue", None):
            return True
        parent = getattr(parent, "_parent", None)
    return False


def _name(text):
    return " ".join(str(text or "").split())[:NAME_CHARS]


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "bpa_progress"
    CALLBACK_NEEDS_ENABLED = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        self._state = None
        # The running task's start and whether its line was written.
        self._task_started = 0.0
        self._task_shown = True
        self._progress_file = os.environ.get("ARGO_PROGRESS_FILE", "")
        self._watch = None

    def _line(self):
        # Called with the lock held.
        self._display.display(PREFIX + json.dumps(self._state, sort_keys=True, separators=(",", ":")))

    def _argo(self):
        if not self._progress_file:
            return
        try:
            tmp = self._progress_file + ".tmp"
            with open(tmp, "w") as f:
                f.write("%d/%d\n" % (self._state["done"], self._state["plays"]))
            os.replace(tmp, self._progress_file)
        except OSError as e:
            self._display.warning("bpa-progress: Argo's progress file %s: %s" % (self._progress_file, e))

    def _watch_long_tasks(self):
        while True:
            time.sleep(1)
            with self._lock:
                if not self._task_shown and time.monotonic() - self._task_started >= LONG_TASK:
                    self._task_shown = True
                    self._line()

    def v2_playbook_on_start(self, playbook):
        plays = playbook.get_plays()
        with self._lock:
            self._order = dict((p._uuid, i) for i, p in enumerate(plays))
            self._state = {
                "playbook": os.path.basename(playbook._file_name),
                "plays": len(plays),
                "done": 0,
                "play": "",
                "task": "",
                "tasks": 0,
                "failed": [],
                "unreachable": [],
            }
            self._argo()
        if self._watch is None:
            self._watch = threading.Thread(target=self._watch_long_tasks, name="bpa-progress", daemon=True)
            self._watch.start()

    def v2_playbook_on_play_start(self, play):
        # Once per batch of a serial play: the same play, the same place.
        with self._lock:
            if self._state is None:
                return
            self._state["done"] = self._order.get(play._uuid, self._state["done"])
            self._state["play"] = _name(play.get_name())
            self._state["task"] = ""
            self._task_shown = True
            self._argo()
            self._line()

    def _task(self, task):
        with self._lock:
            if self._state is None:
                return
            self._state["task"] = _name(task.get_name())
            self._state["tasks"] += 1
            self._task_started = time.monotonic()
            self._task_shown = False

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._task(task)

    def v2_playbook_on_handler_task_start(self, task):
        self._task(task)

    def _host(self, key, result):
        host = result._host.get_name()
        with self._lock:
            if self._state is None or host in self._state[key]:
                return
            self._state[key] = sorted(self._state[key] + [host])
            self._line()

    def v2_runner_on_failed(self, result, ignore_errors=False):
        # A failure a block rescues is not the host's: the stats at the end have the truth.
        if not ignore_errors and not _rescued(result._task):
            self._host("failed", result)

    def v2_runner_on_unreachable(self, result):
        self._host("unreachable", result)

    def v2_playbook_on_stats(self, stats):
        with self._lock:
            if self._state is None:
                return
            # The last play started (a play that matches no host starts too) and no host
            # failed: the playbook ran to its end. Otherwise the plays done stay where the
            # run stopped, and ansible-playbook fails the step.
            self._state["failed"] = sorted(h for h, n in stats.failures.items() if n)
            self._state["unreachable"] = sorted(h for h, n in stats.dark.items() if n)
            ended = self._state["play"] and self._state["done"] == self._state["plays"] - 1
            if ended and not self._state["failed"] and not self._state["unreachable"]:
                self._state["done"] = self._state["plays"]
            self._state["task"] = ""
            self._task_shown = True
            self._argo()
            self._line()
