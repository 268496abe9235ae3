"""One classroom learner of scripts/load_gpu.py, speaking the web API as the page does.

Log in (`POST /api/login`: the session cookies, and the CSRF token every later POST carries in
`X-CSRF-Token`, with an `Origin` header, as scripts/load_classroom.py does), then, per check: `POST
/api/exercises/<id>/check` with the text (the server saves it and grades exactly that text) and follow the
job's server-sent events until `end`. The latency is from sending the POST to reading the `verdict` event;
the queue wait is the verdict's own `timings.queue_wait_s` (service/check.py: the time the check waited for
a run slot). A classroom admits one job per learner at a time and RUNS_PER_MINUTE starts a minute: a 429
waits for its Retry-After and tries again (counted), so a learner's next check starts once its previous
job has ended (a passing GPU check is timed after its verdict).
"""

from __future__ import annotations

import json
import threading
import time

import httpx

from gpuload.plan import Item

RETRY_429 = 30  # tries per check when the server answers 429
MAX_RETRY_AFTER_S = 30.0


class LoginFailed(RuntimeError):
    pass


class WebLearner:
    def __init__(self, base: str, username: str, password: str, stop: threading.Event) -> None:
        self.base, self.username, self.password, self.stop = base, username, password, stop
        self.headers = {"Origin": base}
        self.client = httpx.Client(base_url=base, timeout=httpx.Timeout(60.0))

    def warm_children(self) -> dict | None:
        """The server's warm-child counts (`/api/status`: made, taken, ready ahead, dropped unused), or None
        where it has none (no pool, a cluster) or does not answer."""
        try:
            found = self.client.get("/api/status").json().get("warm_children")
        except (httpx.HTTPError, ValueError, AttributeError):
            return None
        return found if isinstance(found, dict) else None

    def close(self) -> None:
        self.client.close()

    def login(self) -> float:
        started = time.monotonic()
        for _ in range(10):
            r = self.client.post(
                "/api/login",
                json={"username": self.username, "password": self.password},
                headers=self.headers,
            )
            if r.status_code == 200:
                self.headers["X-CSRF-Token"] = r.json()["csrf"]
                return time.monotonic() - started
            if r.status_code in (429, 503):  # the hashing pool is full: wait as told
                time.sleep(min(MAX_RETRY_AFTER_S, float(r.headers.get("retry-after", "1"))))
                continue
            break
        raise LoginFailed(f"{self.username}: log-in answered {r.status_code}: {r.text[:200]}")

    def check(self, item: Item, read_timeout: float) -> dict:
        """Submit one check and follow it to its end. Returns its record: always `index`, `exercise`, `kind`,
        `file`; with a verdict: `passed`, `kinds` (its failures' kinds), `latency_s`, `queue_wait_s`, `timings`;
        without one: `error` (what went wrong) and, when the run was cut, `unfinished`."""
        record: dict = {"index": item.index, "exercise": item.exercise, "kind": item.kind, "file": item.file}
        record["learner"] = self.username
        path = f"/api/exercises/{item.exercise}/check"
        response = None
        for _ in range(RETRY_429):
            submitted = time.monotonic()
            record["submitted_at"] = submitted
            try:
                response = self.client.post(path, json={"text": item.text}, headers=self.headers)
            except httpx.HTTPError as exc:
                return record | self._broken(exc)
            if response.status_code != 429:
                break
            record["rate_limited"] = record.get("rate_limited", 0) + 1
            wait = min(MAX_RETRY_AFTER_S, float(response.headers.get("retry-after", "2")))
            if self.stop.wait(wait):
                return record | {"unfinished": True, "error": "the run ended while a 429 was waited out"}
        assert response is not None
        if response.status_code != 200:
            return record | {"error": f"check answered {response.status_code}: {response.text[:300]}"}
        events = response.json()["events"]
        record["job"] = response.json()["job"]
        try:
            self._follow(events, record, submitted, read_timeout)
        except httpx.HTTPError as exc:
            if "passed" in record:  # the verdict came; the job's end (a GPU check's timing) did not
                record["after_verdict"] = f"{type(exc).__name__}: {str(exc)[:200]}"
            else:
                record |= self._broken(exc)
        if "passed" not in record and "error" not in record:
            if self.stop.is_set():  # the run's end stopped the server, which ended the queued check
                return record | {"unfinished": True, "error": "ended by the end of the run, no verdict"}
            record["error"] = "the event stream ended without a verdict"
        return record

    def _broken(self, exc: Exception) -> dict:
        if self.stop.is_set():  # the server was stopped on purpose: the run's time was up
            return {"unfinished": True, "error": f"cut by the end of the run ({type(exc).__name__})"}
        return {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}

    def _follow(self, events: str, record: dict, submitted: float, read_timeout: float) -> None:
        name = ""
        timeout = httpx.Timeout(60.0, read=read_timeout)
        with self.client.stream("GET", events, timeout=timeout) as stream:
            if stream.status_code != 200:
                record["error"] = f"events answered {stream.status_code}"
                return
            for line in stream.iter_lines():
                if line.startswith("event: "):
                    name = line[7:]
                    seen = record.setdefault("events", [])
                    if len(seen) < 40:  # what the stream said, for a check that ends without a verdict
                        seen.append(name)
                    if name == "end":
                        record["ended_s"] = round(time.monotonic() - submitted, 3)
                        return
                    continue
                if not line.startswith("data: "):
                    continue
                if name == "verdict":
                    data = json.loads(line[6:])
                    if self.stop.is_set() or data.get("stopped"):  # the run's end stopped it: no verdict
                        record |= {"unfinished": True, "error": "stopped by the end of the run"}
                        return
                    timings = data.get("timings") or {}
                    record |= {
                        "latency_s": round(time.monotonic() - submitted, 3),
                        "passed": bool(data.get("passed")),
                        "kinds": sorted({f.get("kind", "?") for f in data.get("failures", [])}),
                        "queue_wait_s": timings.get("queue_wait_s"),
                        "timings": timings,
                        "node": data.get("node", ""),
                        "executor": data.get("executor", ""),
                    }
                    if not record["passed"]:
                        first = (data.get("failures") or [{}])[0]
                        record["first_failure"] = str(first.get("message", ""))[:200]
                elif name == "speed":  # after the verdict: what the speed line's two runs used
                    timings = json.loads(line[6:]).get("timings")
                    if isinstance(timings, dict):
                        record.setdefault("timings", {}).update(
                            {
                                str(k)[:64]: v
                                for k, v in list(timings.items())[:16]
                                if isinstance(v, int | float)
                            }
                        )
                elif name == "error":
                    record["error"] = f"error event: {line[6:306]}"
                elif name in ("cancelled", "stopped", "worker-lost") or (
                    name == "output" and not record.get("last_output")
                ):
                    record["last_output"] = line[6:306]
