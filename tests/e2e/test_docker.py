"""docker/ for real: the image built, the compose stack run end to end, the stream SIGKILLed and started again.

Runs wherever ``docker info`` answers, and skips otherwise with the engine's one-line error as the reason.
``tests/e2e/test_cluster.py`` runs the stack's commands on 127.0.0.1 without Docker; this runs the containers:

* builds ``docker/Dockerfile`` (context: the repository root) as ``hudi-streaming:dev``, the image compose.yaml
  names. ``docker/Dockerfile.dockerignore`` is read by BuildKit only, so a client that builds with BuildKit is
  preferred (one with ``buildx``, or one from before Docker 23, where ``DOCKER_BUILDKIT=1`` turns on the built-in
  BuildKit); the legacy builder, the last resort, sends the whole repository (its ``.venv`` too) as context;
* starts the stack (``up``) under a project name of its own, from a copy of ``docker/compose.yaml`` with three
  edits: no top-level ``name`` (``-p`` names the project; Compose 1.x, Debian's, rejects the key), the build
  context as an absolute path (the copy lives elsewhere) and no published port (the master's UI on
  127.0.0.1:8080 is not needed, and the port may be taken);
* waits for the writer's 20 commits and the stream's first batches, kills the stream (``compose kill``: SIGKILL),
  starts it again (``up --no-deps stream``: without ``--no-deps``, ``up`` would run the exited writer again) and
  runs the writer once more (``compose run --rm writer``: 20 more commits) while the restarted stream runs;
* waits until the stream reports the writer's last instant with nothing left to read, copies the volume out and
  checks that the batches, applied in order, rebuild the table's snapshot (``read_table``: keys and values) and
  that no (key, commit time) arrived twice;
* takes the stack down with its volume (the image stays).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from cluster_job import parse_progress
from conftest import REPO
from support import waits
from support.verify import apply_upserts, delivered, state_differences

from hudi_streaming import read_table
from hudi_streaming.hoodie import HudiTable

COMPOSE = REPO / "docker" / "compose.yaml"
IMAGE = "hudi-streaming:dev"
#: how long anything may take (a cold build downloads PySpark and a JRE; containers start slowly on 2 cores)
PATIENCE = 900.0


def engine_error() -> str | None:
    """None when ``docker info`` answers; else its one-line error."""
    docker = shutil.which("docker")
    if docker is None:
        return "no docker client on PATH"
    try:
        r = subprocess.run([docker, "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                           timeout=60)
    except subprocess.TimeoutExpired:
        return "docker info did not answer in 60 s"
    if r.returncode == 0 and r.stdout.strip():
        return None
    lines = [ln.strip() for ln in (r.stderr + r.stdout).splitlines() if ln.strip()]
    return lines[-1] if lines else f"docker info exited {r.returncode}"


ENGINE_ERROR = engine_error()
pytestmark = pytest.mark.skipif(ENGINE_ERROR is not None, reason=f"docker info: {ENGINE_ERROR}")


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, **kwargs)


def docker_clients() -> list[str]:
    """Every ``docker`` on PATH, in PATH order (a machine may have a new client and a distribution's older one)."""
    found: list[str] = []
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        path = os.path.realpath(os.path.join(folder, "docker"))
        if os.access(path, os.X_OK) and os.path.isfile(path) and path not in found:
            found.append(path)
    return found


def builder() -> tuple[str, dict[str, str], str]:
    """(client, extra environment, how) for ``docker build``: BuildKit when any client on PATH has it."""
    clients = docker_clients()
    for c in clients:
        if run([c, "buildx", "version"]).returncode == 0:
            return c, {}, "BuildKit (buildx)"
    for c in clients:
        version = run([c, "version", "--format", "{{.Client.Version}}"]).stdout.strip()
        if re.match(r"\d+", version) and int(re.match(r"\d+", version)[0]) < 23:
            return c, {"DOCKER_BUILDKIT": "1"}, f"BuildKit built into client {version}"
    return clients[0], {"DOCKER_BUILDKIT": "0"}, "the legacy builder (whole repository as context)"


def compose_tool() -> list[str]:
    """``docker compose`` (the plugin) or ``docker-compose`` (1.x or 2.x)."""
    docker = shutil.which("docker")
    assert docker
    if run([docker, "compose", "version"]).returncode == 0:
        return [docker, "compose"]
    standalone = shutil.which("docker-compose")
    if standalone is None:
        pytest.skip("the Docker engine answers, but there is no Compose (neither `docker compose` nor "
                    "`docker-compose`)")
    return [standalone]


def compose_file(dest: Path) -> Path:
    """docker/compose.yaml with the three edits the module's docstring gives, each asserted to apply once."""
    text = COMPOSE.read_text()
    text, names = re.subn(r"^name: .*\n", "", text, flags=re.M)
    text, contexts = re.subn(r"^(\s+context:) \.\.$", lambda m: f"{m[1]} {REPO}", text, flags=re.M)
    text, ports = re.subn(r"^    ports:\n(?:      - .*\n)+", "", text, flags=re.M)
    assert (names, contexts, ports) == (1, 1, 1), f"{COMPOSE} changed: edit this test's copy of it"
    dest.write_text(text)
    return dest


class Stack:
    """The compose project: its commands, its containers' logs, its volume."""

    def __init__(self, tool: list[str], file: Path, project: str, root: Path):
        self.base = tool + ["-f", str(file), "-p", project]
        self.project, self.root = project, root
        self.docker = shutil.which("docker") or "docker"

    def __call__(self, *args: str, timeout: float = PATIENCE) -> str:
        r = run(self.base + list(args), timeout=timeout)
        assert r.returncode == 0, f"compose {' '.join(args)} exited {r.returncode}:\n{(r.stdout + r.stderr)[-4000:]}"
        return r.stdout

    def container(self, service: str) -> str:
        """The service's container, running or not (by Compose's labels, which 1.x and 2.x both set; not a
        one-off container of ``compose run``)."""
        (cid,) = run([self.docker, "ps", "-a", "-q", "--filter", f"label=com.docker.compose.project={self.project}",
                      "--filter", f"label=com.docker.compose.service={service}",
                      "--filter", "label=com.docker.compose.oneoff=False"]).stdout.split()
        return cid

    def state(self, service: str) -> str:
        return run([self.docker, "inspect", "-f", "{{.State.Status}} {{.State.ExitCode}}",
                    self.container(service)]).stdout.strip()

    def stdout(self, service: str) -> str:
        return run([self.docker, "logs", self.container(service)]).stdout

    def logs(self, service: str) -> str:
        r = run([self.docker, "logs", "--tail", "60", self.container(service)])
        return f"--- {service}\n{r.stdout}{r.stderr}"

    def progress(self) -> list[dict[str, str]]:
        """The stream's ``progress`` lines (tests/e2e/cluster_job.py), as dicts, both runs'."""
        return parse_progress(self.stdout("stream"))

    def copy_out(self, *paths: str) -> Path:
        """Copy paths of the volume ``data`` into a fresh folder (through a container of the image)."""
        dest = self.root / f"data-{time.monotonic_ns()}"
        dest.mkdir()
        tar = subprocess.Popen([self.docker, "run", "--rm", "-v", f"{self.project}_data:/data", "--entrypoint",
                                "tar", IMAGE, "-C", "/data", "-c", *paths], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-C", str(dest), "-x"], stdin=tar.stdout, check=True)
        assert tar.wait() == 0
        return dest


def wait_for(condition, what: str, stack: Stack, *services: str) -> None:
    waits.wait_for(condition, what, PATIENCE, interval=1.0,
                   explain=lambda: "\n".join(stack.logs(s) for s in services))


def test_image_builds_and_the_compose_stack_delivers_each_change_once(tmp_path):
    docker, build_env, how = builder()
    t0 = time.monotonic()
    build = run([docker, "build", "-f", "docker/Dockerfile", "-t", IMAGE, "."], cwd=REPO,
                env={**os.environ, **build_env}, timeout=PATIENCE)
    built = time.monotonic() - t0
    assert build.returncode == 0, f"docker build ({how}) exited {build.returncode}:\n" \
                                  f"{(build.stdout + build.stderr)[-4000:]}"
    print(f"built {IMAGE} in {built:.0f} s with {how} ({docker})")

    stack = Stack(compose_tool(), compose_file(tmp_path / "compose.yaml"), f"hudi-streaming-test-{os.getpid()}",
                  tmp_path)
    try:
        stack("up", "-d", "--no-build")
        wait_for(lambda: stack.state("writer") == "exited 0", "the writer's 20 commits", stack, "writer")
        wait_for(lambda: len(stack.progress()) >= 2, "the stream's first batches", stack, "stream")
        stack("kill", "stream")
        before_kill = stack.progress()
        stack("up", "-d", "--no-deps", "--no-build", "stream")
        stack("run", "--rm", "-T", "writer")  # 20 more commits while the restarted stream runs
        last = HudiTable(str(stack.copy_out("table") / "table")).timeline.latest_write_time()

        def caught_up() -> bool:
            assert not stack.state("stream").startswith("exited"), "the stream stopped"
            return any(p["cursor"] == last and p["rows"] == "0" for p in stack.progress())

        wait_for(caught_up, f"the restarted stream to reach the writer's last instant {last}", stack, "stream")
        after = stack.progress()[len(before_kill):]
        data = stack.copy_out("table", "stream")
    finally:
        stack("down", "-v", "--remove-orphans", "-t", "5")
    # the restarted stream went on from its checkpoint: after the last batch the killed run reported (a batch it
    # completed without reporting, the job prints every half second, is not run again either)
    assert after and int(after[0]["batch"]) > int(before_kill[-1]["batch"]), (before_kill, after)
    rows = delivered(data / "stream" / "out")
    twice = [k for k, n in Counter((r["_hoodie_record_key"], r["_hoodie_commit_time"]) for r in rows).items() if n > 1]
    assert twice == [], f"delivered more than once: {twice[:10]}"
    snapshot = read_table(str(data / "table"))
    assert snapshot.num_rows
    assert state_differences(apply_upserts(rows), snapshot) == []
    print(f"stream: {len(before_kill)} batches before the kill, {len(after)} after; {len(rows)} rows delivered; "
          f"the table's {snapshot.num_rows} rows rebuilt")
