"""`tritonlab serve`: the course in the browser, safe by default; and `tritonlab notebook`: the course in Jupyter.

Binds 127.0.0.1, prints a URL with a fresh random token (exchanged for a cookie on first visit), refuses to
listen on any other address unless a token was given explicitly, and warms up the sandbox worker so that
the first Run does not wait for torch and triton to import.
"""

from __future__ import annotations

import signal
import socket
import sys
import threading
import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from tritonlab.cli import classroom as class_cli
from tritonlab.cli.serve_banner import WILDCARD_HOSTS, base_url, classroom_banner
from tritonlab.i18n import t
from tritonlab.web.security import LOOPBACK_HOSTS, is_loopback, new_token


def bind(host: str, port: int) -> socket.socket:
    """A listening socket, or a clear error: port 0 picks a free port."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        message = t("serve.cannot_listen", lang(), host=host, port=port, error=exc.strerror)
        if exc.errno == 98:
            message += "; " + t("serve.try_port", lang(), port=port + 1)
        raise typer.BadParameter(message) from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def stopping_server(config: object, stop_runs: Callable[[], None]) -> object:
    """uvicorn's Server, except that Ctrl+C first stops the runs in flight, so their live streams end at once."""
    import uvicorn

    class StoppingServer(uvicorn.Server):
        def handle_exit(self, sig: int, frame: object) -> None:
            threading.Thread(target=stop_runs, daemon=True).start()
            super().handle_exit(sig, frame)  # type: ignore[arg-type]

    return StoppingServer(config)  # type: ignore[arg-type]


def check_host(host: str, token: str | None) -> None:
    if is_loopback(host):
        return
    if token is None:
        typer.secho(t("serve.refuse_host", lang(), host=host), fg="red", err=True)
        raise typer.Exit(2)
    if len(token) < 16:
        typer.secho(t("serve.refuse_short_token", lang()), fg="red", err=True)
        raise typer.Exit(2)


def global_lang() -> str | None:
    """`tritonlab --lang xx serve`: the CLI keeps its global options in cli.common.State."""
    from tritonlab.cli.common import State

    return State.lang


def lang() -> str:
    """The language of this command's messages, and the web page's default (a browser's choice wins)."""
    from tritonlab import config

    return config.language(global_lang())


def check_sandbox(
    host: str,
    hardened: bool | None,
    reason: str,
    allow_unhardened: bool,
    run_limits: dict | None = None,
    shared: bool | None = None,
) -> bool:
    """Say loudly when learner code runs without sandbox layer 2 or without a per-run memory limit; refuse to
    serve other people (a non-loopback address, or `shared=True`: a classroom) without both, unless
    --allow-unhardened. `run_limits` is the cgroup probe's report (Service.run_limits; None: not probed).
    A per-run memory limit is what a shared server needs; a missing pids controller (a host that delegates
    memory only) is a warning: RLIMIT_NPROC per run stands in for it in the hardened layer."""
    missing = []
    if hardened:
        typer.echo("Sandbox: hardened (bubblewrap, unprivileged user; `tritonlab doctor` lists the layers).")
    else:
        typer.secho(
            f"WARNING: learner code runs WITHOUT the hardened sandbox layer: {reason}", fg="yellow", err=True
        )
        missing.append("the hardened sandbox (install bubblewrap; on a GPU its CUDA probe must pass)")
    if run_limits is not None:
        active = list(run_limits.get("active") or [])
        if run_limits.get("per_run_cgroups") and "memory" in active:
            typer.echo(f"Runs: one cgroup each ({', '.join(active)} limits verified by a probe).")
            if not run_limits.get("complete"):
                typer.secho(
                    "WARNING: per-run cgroups hold only "
                    + ", ".join(active)
                    + ": "
                    + str(run_limits["reason"]),
                    fg="yellow",
                    err=True,
                )
        else:
            typer.secho(
                "WARNING: runs are NOT in per-run cgroups with a memory limit: "
                + str(run_limits.get("reason") or "not available"),
                fg="yellow",
                err=True,
            )
            missing.append(
                "per-run cgroups with a memory limit (run as root, or give the service a delegated cgroup subtree)"
            )
    if shared is None:
        shared = not is_loopback(host)
    if not missing or not shared or allow_unhardened:
        return True
    typer.secho(
        f"Refusing to serve other people's code on {host!r} without {' and '.join(missing)}; check "
        "`tritonlab doctor`, or pass --allow-unhardened if every user is trusted.",
        fg="red",
        err=True,
    )
    return False


def run_server(
    host: str = "127.0.0.1",
    port: int = 8000,
    open_browser: bool = True,
    token: str | None = None,
    backend: str | None = None,
    allow_unhardened: bool = False,
    classroom: bool = False,
    public_url: str | None = None,
    executor: str | None = None,
    oidc: dict | None = None,
    oidc_config: Path | None = None,
    trusted_proxies: list[str] | None = None,
) -> None:
    import uvicorn

    from tritonlab.content.course import CourseError
    from tritonlab.service import BackendError, ExecutorError, Service
    from tritonlab.web.app import create_app
    from tritonlab.web.connections import ConnectionLimits, raise_nofile
    from tritonlab.web.proxy import TrustedProxies

    if public_url is not None and not public_url.startswith(("http://", "https://")):
        raise typer.BadParameter("must start with https:// (or http://)", param_hint="--public-url")
    provider = class_cli.sso_settings(oidc or {}, oidc_config, public_url, classroom)
    proxies = trusted(trusted_proxies)
    room = open_classroom(host) if classroom else None
    if room is not None and provider is not None:
        room.use_sso(provider)
    if room is None:
        check_host(host, token)
    if token is not None and not token.strip():
        raise typer.BadParameter(t("serve.empty_token", lang()), param_hint="--token")
    secret = token or new_token()
    sock = bind(host, port)
    try:
        service = Service(backend=backend, lang=global_lang(), executor=executor)
        if room is not None:
            service.private_workspaces()  # before the worker starts: no shared workspace in the sandbox
        _ = service.choice  # a forced but missing GPU is a usage error, reported now
    except (CourseError, BackendError, ExecutorError) as exc:
        sock.close()
        if room is not None:
            room.close()
        typer.secho(t("serve.cannot_serve", lang(), detail=exc), fg="red", err=True)
        raise typer.Exit(1 if isinstance(exc, CourseError) else 2) from None
    from tritonlab.service import SandboxUnavailable as Unavailable

    try:
        service.warm_up()  # with --executor ray: join the cluster and start its workers
    except Unavailable as exc:
        service.hardened, service.hardened_reason = False, str(exc)
    except ExecutorError as exc:
        sock.close()
        typer.secho(t("serve.cannot_serve", lang(), detail=exc), fg="red", err=True)
        raise typer.Exit(2) from None
    shared = room is not None or not is_loopback(host)  # a classroom serves others even behind a proxy
    limits = service.run_limits() if shared else None  # the probe takes a few seconds
    if not check_sandbox(host, service.hardened, service.hardened_reason, allow_unhardened, limits, shared):
        service.close()
        sock.close()
        if room is not None:
            room.close()
        raise typer.Exit(2)
    if host in WILDCARD_HOSTS:
        allowed = None
    elif is_loopback(host):
        allowed = LOOPBACK_HOSTS
    else:
        allowed = (*LOOPBACK_HOSTS, host.strip("[]"))
    app = create_app(service, secret, allowed_hosts=allowed, classroom=room, public_url=public_url)
    app.add_middleware(TrustedProxies, trusted=proxies)  # outermost: the client address every layer sees
    actual = sock.getsockname()[1]
    conns = ConnectionLimits.for_nofile(raise_nofile())  # web/connections.py: half-open floods, slow heads
    typer.echo(f"file descriptors: {conns.nofile}; at most {conns.max_connections} connections open at once")
    typer.echo(t("serve.serving", service.lang, host=host, port=actual, backend=service.backend))
    if room is None:
        shown = "127.0.0.1" if host in WILDCARD_HOSTS else (f"[{host.strip('[]')}]" if ":" in host else host)
        url = f"http://{shown}:{actual}/?token={secret}"
        typer.echo(t("serve.open_url", service.lang))
        typer.secho(f"    {url}", bold=True)
    else:
        url, lines = classroom_banner(room, base_url(host, actual, public_url), service.lang)
        for line in lines:
            typer.secho(line, bold=line.startswith("    "))
    typer.echo(t("serve.stop", service.lang), err=False)
    if proxies:
        typer.echo("Forwarded headers believed only from: " + ", ".join(str(n) for n in proxies))
    server = stopping_server(
        uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=5,
            proxy_headers=False,  # uvicorn believes X-Forwarded-* from 127.0.0.1; web/proxy.py decides instead
            **conns.uvicorn_options(),
        ),
        app.state.jobs.stop_all,
    )
    if open_browser:
        threading.Timer(0.8, webbrowser.open, args=(url,)).start()
    # uvicorn re-raises the signal that stopped it once it has shut down; SIGTERM's default action (systemd's
    # `stop`, `kill`) would end the process there, before the `finally` below releases the sandbox (its
    # run-folder mounts, cache tmpfs and cgroups): under this handler it is a clean exit instead
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server.run(sockets=[sock])
    finally:
        service.close()
        sock.close()
        if room is not None:
            room.close()


def trusted(values: list[str] | None) -> tuple:
    """The proxies whose X-Forwarded-* headers are believed: --trusted-proxy, else TRITONLAB_TRUSTED_PROXIES,
    else none (web/proxy.py)."""
    from tritonlab.web import proxy

    try:
        return proxy.parse_networks(values) if values else proxy.from_env()
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--trusted-proxy") from None


def check_argon2(host: str) -> None:
    """A password-hashing cost below OWASP's floor (TRITONLAB_ARGON2, meant for tests) is refused for a class
    served beyond loopback, and warned about on loopback."""
    from tritonlab import config

    try:
        cost = config.argon2_cost()
    except ValueError as exc:
        typer.secho(str(exc), fg="red", err=True)
        raise typer.Exit(2) from None
    if not config.argon2_is_weak(cost):
        return
    floor = config.ARGON2_FLOOR
    what = (
        f"TRITONLAB_ARGON2 sets argon2id to t={cost['t']}, m={cost['m']} KiB: below the minimum of "
        f"t={floor['t']}, m={floor['m']} KiB (a setting for tests)"
    )
    if not is_loopback(host):
        typer.secho(f"refusing to serve a class on {host}: {what}; unset it", fg="red", err=True)
        raise typer.Exit(2)
    typer.secho(f"warning: {what}", fg="yellow", err=True)


def open_classroom(host: str = "127.0.0.1"):  # type: ignore[no-untyped-def]
    """The classroom database for `serve --classroom`, or a clear refusal when there is no class yet."""
    from tritonlab.classroom.room import Classroom

    check_argon2(host)
    try:
        room = Classroom()
    except Exception as exc:
        from tritonlab.classroom.room import database_url, redact

        typer.secho(f"cannot open the classroom database {redact(database_url())}: {exc}", fg="red", err=True)
        raise typer.Exit(1) from None
    if room.the_class() is None:
        room.close()
        typer.secho("no class yet: run `tritonlab classroom init --name NAME` first", fg="red", err=True)
        raise typer.Exit(2)
    return room


def register(app: typer.Typer) -> None:
    """Add the `serve` command to the tritonlab CLI."""

    @app.command("serve")
    def serve(
        host: str = typer.Option(
            "127.0.0.1", "--host", help="Address to listen on. Anything but loopback needs --token."
        ),
        port: int = typer.Option(
            8000, "--port", min=0, max=65535, help="Port to listen on (0: any free port)."
        ),
        no_browser: bool = typer.Option(False, "--no-browser", help="Do not open a browser window."),
        token: str | None = typer.Option(None, "--token", help="Access token (default: a fresh random one)."),
        backend: str | None = typer.Option(
            None, "--backend", help="auto, interpreter or gpu (default: TRITONLAB_BACKEND, else auto)."
        ),
        allow_unhardened: bool = typer.Option(
            False,
            "--allow-unhardened",
            help="Serve a non-loopback address even without the hardened sandbox (trusted users only).",
        ),
        classroom: bool = typer.Option(
            False,
            "--classroom",
            help="Serve a class: accounts and per-learner state (see docs/classroom.md).",
        ),
        public_url: str | None = typer.Option(
            None,
            "--public-url",
            help="The address learners use, e.g. https://class.example.org behind a TLS proxy (cookies get Secure).",
        ),
        executor: str | None = typer.Option(
            None,
            "--executor",
            help="local (this machine, default) or ray (a Ray cluster at RAY_ADDRESS; default: "
            "TRITONLAB_EXECUTOR). See docs/scale.md.",
        ),
        oidc_issuer: class_cli.Issuer = None,
        oidc_client_id: class_cli.ClientId = None,
        oidc_client_secret_file: class_cli.SecretFile = None,
        oidc_allowed_domain: class_cli.Domains = None,
        oidc_allowed_group: class_cli.Groups = None,
        oidc_groups_claim: class_cli.GroupsClaim = None,
        oidc_teacher_group: class_cli.TeacherGroups = None,
        oidc_only: class_cli.Only = False,
        oidc_name: class_cli.Name = None,
        oidc_config: class_cli.ConfigFile = None,
        trusted_proxy: list[str] = typer.Option(
            [],
            "--trusted-proxy",
            metavar="ADDR",
            help="Believe X-Forwarded-For/-Proto only from this proxy address or network (repeatable; default: "
            "TRITONLAB_TRUSTED_PROXIES, else from nobody). See docs/deploy.md.",
        ),
    ) -> None:
        """Serve the course in your browser: lessons, editor, Run/Check with a live terminal, quizzes."""
        oidc = {
            "issuer": oidc_issuer,
            "client_id": oidc_client_id,
            "client_secret_file": oidc_client_secret_file,
            "allowed_domains": oidc_allowed_domain,
            "allowed_groups": oidc_allowed_group,
            "groups_claim": oidc_groups_claim,
            "teacher_groups": oidc_teacher_group,
            "only": True if oidc_only else None,  # not given: the --oidc-config file may say
            "name": oidc_name,
        }
        run_server(
            host=host,
            port=port,
            open_browser=not no_browser,
            token=token,
            backend=backend,
            allow_unhardened=allow_unhardened,
            classroom=classroom,
            public_url=public_url,
            executor=executor,
            oidc=oidc,
            oidc_config=oidc_config,
            trusted_proxies=trusted_proxy,
        )


# ---- `tritonlab notebook` ----------------------------------------------------------------------------------

NOTEBOOK_HELP = """Write lessons as Jupyter notebooks, to open in Jupyter or Colab (see docs/notebooks.md).

Each notebook holds the lesson text as Markdown cells, its examples as code cells, the exercise starter in a
`%%check` cell and the quiz.

Use the global --lang for the language: `tritonlab --lang pt notebook 5`. --lang after the command works too."""


def register_notebook(app: typer.Typer) -> None:
    """Add `tritonlab notebook LESSON|--all`: write lessons as .ipynb (imports neither nbformat nor IPython
    until it runs). Exit codes: 0 written, 2 usage error (unknown lesson, no lesson given, nbformat missing)."""

    @app.command("notebook", help=NOTEBOOK_HELP)
    def notebook(
        lesson: Annotated[
            str | None, typer.Argument(metavar="LESSON", help="Lesson number (5) or id (05-vector-add).")
        ] = None,
        all_lessons: Annotated[bool, typer.Option("--all", help="Write every lesson.")] = False,
        out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the notebooks to.")] = Path(
            "notebooks"
        ),
        lang: Annotated[str | None, typer.Option("--lang", help="Language: en, pt or es.")] = None,
    ) -> None:
        from tritonlab import config
        from tritonlab.cli.common import State, console, fail, make_service

        if (lesson is None) == (not all_lessons):
            raise fail("give one LESSON (for example: tritonlab notebook 5) or --all")
        try:
            from tritonlab.notebook.build import write_lesson
        except ModuleNotFoundError as exc:  # nbformat is a dependency; a broken install says so
            raise fail(f"{exc.name} is not installed: pip install nbformat") from None
        language = config.language(lang or State.lang)
        service = make_service(backend="interpreter")
        if all_lessons:
            lessons = list(service.course.lessons)
        else:
            try:
                lessons = [service.lesson(lesson)]
            except KeyError:
                raise fail(f"no lesson {lesson!r}; lessons are 1 to {len(service.course.lessons)}") from None
        for item in lessons:
            path = write_lesson(service.course, item, out, language)
            console().print(f"wrote {path}")
