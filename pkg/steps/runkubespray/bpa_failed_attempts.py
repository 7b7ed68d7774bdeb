# An Ansible callback that shows why each failed attempt of a retried task failed.
#
# Ansible's default output shows only "FAILED - RETRYING" for an attempt that failed (its result
# needs -vv, which prints every task's result), and then the last attempt's error. kubespray
# retries kubeadm's join 3 times; when the first attempt fails half-way, the next ones fail
# kubeadm's preflight on the files it left, and the error that explains the failure, the first
# one, was nowhere. run-kubespray puts this plugin on Ansible's callback path (the step's
# template, runkubespray.FailedAttemptsPlugin): it needs no enabling and changes nothing else.
#
# For a failed attempt it prints the module's message and return code and the last lines of its
# stderr and stdout, once: an attempt that failed as the one before it says only that (a task
# that polls for minutes stays short). A task's no_log result reaches callbacks censored.
# Nothing here may contain two opening braces in a row: Argo would read them as its own
# template in the step's raw artifact.
from __future__ import annotations

DOCUMENTATION = """
    name: bpa_failed_attempts
    type: aggregate
    short_description: shows why each failed attempt of a retried task failed
    description:
      - For each failed attempt of a task with retries, the message, return code and the last
        lines of stderr and stdout, once per distinct failure.
"""

from ansible.plugins.callback import CallbackBase

# The last lines of each stream shown, and the longest line.
TAIL_LINES = 20
LINE_CHARS = 400


def _tail(lines, n):
    return [line[:LINE_CHARS] for line in lines[-n:]]


def failed(result):
    """Whether an attempt failed, rather than ran and did not meet the task's until (a wait).

    Callbacks get a result without its "failed" key (Ansible's TaskResult.clean_copy): a module
    that returns a code failed if it is not 0; one that returns none, if it says why.
    """
    if "censored" in result:
        return True
    rc = result.get("rc")
    if rc is not None:
        return rc != 0
    return bool(result.get("msg"))


def why(result):
    """The lines that say why an attempt failed: message, return code, stderr, stdout."""
    if "censored" in result:
        return ["  " + result["censored"]]
    out = []
    msg = result.get("msg")
    rc = result.get("rc")
    if msg or rc is not None:
        head = "  msg: %s" % (msg or "")
        if rc is not None:
            head += " (rc %s)" % rc
        out.append(head)
    for stream in ("stderr", "stdout"):
        lines = result.get(stream + "_lines")
        if lines is None:
            lines = str(result.get(stream) or "").splitlines()
        if lines:
            out.append("  %s (last %d of %d lines):" % (stream, min(len(lines), TAIL_LINES), len(lines)))
            out.extend("  | " + line for line in _tail(lines, TAIL_LINES))
    return out


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "bpa_failed_attempts"
    CALLBACK_NEEDS_ENABLED = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Per host and task: the attempt whose failure was shown last, and its lines.
        self._shown = {}

    def v2_runner_retry(self, result):
        res = result._result
        if not failed(res):
            return
        host = result._host.get_name()
        key = (host, result._task._uuid)
        attempt, attempts = res.get("attempts", 0), res.get("retries", 0)
        lines = why(res)
        shown = self._shown.get(key)
        if shown is not None and shown[1] == lines:
            self._display.display("bpa: [%s] attempt %d of %d failed as attempt %d did" % (host, attempt, attempts, shown[0]))
            return
        self._shown[key] = (attempt, lines)
        self._display.display("\n".join(["bpa: [%s] attempt %d of %d failed:" % (host, attempt, attempts)] + lines))
