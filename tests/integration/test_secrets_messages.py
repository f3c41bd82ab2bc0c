"""URL secrets in the messages of failures (red team B8, B9): a base_url failing its check, an
embeddings endpoint answering 404, and any error reaching Hydra, which prints every override
as typed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memrl_bench.core.config import ConfigError, validated
from memrl_bench.llm.embedders import OpenAIEmbedder
from memrl_bench.llm.settings import LLMConfig
from tests.fault_server import FaultServer

ROOT = Path(__file__).resolve().parents[2]
CANARY = "Zq7Canary9xK"


def memrl_bench(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OPENAI_API_KEY": "k"}
    return subprocess.run([sys.executable, "-m", "memrl_bench", *args], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)


SERVER_SETTINGS = {  # the group holding a base_url: its settings model and the other keys it needs
    "llm": (LLMConfig, {"name": "openai", "model": "m"}),
    "embedder": (OpenAIEmbedder.Settings, {"name": "openai", "model": "e"}),
}


# A password holding '?', '#' or a space ends the host early for URL parsers: its part before
# the '@' was read as a query, a fragment or the URL's end, so the old redaction kept it.
MALFORMED = {
    "question_in_pass": f"http://u:a?{CANARY}@127.0.0.1:8000/v1",
    "question_after_pass": f"http://u:{CANARY}?x@127.0.0.1:8000/v1",
    "hash_in_pass": f"http://u:a#{CANARY}@127.0.0.1:8000/v1",
    "space_in_pass": f"http://u:a {CANARY}@127.0.0.1:8000/v1",
    "newline_in_pass": f"http://u:a\n{CANARY}@127.0.0.1:8000/v1",
    "bad_port_with_pass": f"http://u:{CANARY}@127.0.0.1:80009/v1",
    "no_scheme_with_pass": f"u:{CANARY}@127.0.0.1:8000/v1",
    "bad_scheme_with_pass": f"ftp://u:{CANARY}@127.0.0.1:8000/v1",
    "two_ports_with_pass": f"http://u:{CANARY}@127.0.0.1:9:9/v1",  # round 2: httpx's InvalidURL traceback, exit 1
    "control_char_with_pass": f"http://u:{CANARY}@127.0.0.1:8000/v\x01",
    "scheme_in_pass": f"http://u:{CANARY}x://y@127.0.0.1:8000/v1",
}


@pytest.mark.parametrize("url", MALFORMED.values(), ids=MALFORMED.keys())
@pytest.mark.parametrize("group", SERVER_SETTINGS)
def test_a_malformed_url_is_refused_without_echoing_its_password(group: str, url: str):
    model, values = SERVER_SETTINGS[group]
    with pytest.raises(ConfigError, match=f"^{group}.base_url: ") as refused:
        validated(model, {**values, "base_url": url}, group)
    assert CANARY not in str(refused.value) and "[redacted]@127.0.0.1:" in str(refused.value), refused.value


# A quote is legal in a query, but it ends a URL in a text (a quoted override closes with it): a
# key's value after it was written in the clear (the sixth independent round: `?password=ab'...`); so does
# another `scheme://` (the seventh).
ENDS_EARLY = {
    "quote_in_key": f"http://127.0.0.1:8000/v1?password=ab'{CANARY}",
    "double_quote_in_key": f'http://127.0.0.1:8000/v1?api_key=ab"{CANARY}',
    "backtick_in_key": f"http://127.0.0.1:8000/v1?token=ab`{CANARY}",
    "angle_in_key": f"http://127.0.0.1:8000/v1?secret=ab<{CANARY}",
    "quote_in_path": f"http://127.0.0.1:8000/v1'{CANARY}",
    "scheme_in_key": f"http://127.0.0.1:8000/v1?api_key={CANARY}x://y",  # the seventh round: read as a URL of its own
}


@pytest.mark.parametrize("url", ENDS_EARLY.values(), ids=ENDS_EARLY.keys())
@pytest.mark.parametrize("group", SERVER_SETTINGS)
def test_a_url_holding_what_ends_a_url_in_a_text_is_refused_without_echoing_it(group: str, url: str):
    model, values = SERVER_SETTINGS[group]
    with pytest.raises(ConfigError, match=f"^{group}.base_url: holds a space, a quote") as refused:
        validated(model, {**values, "base_url": url}, group)
    assert "percent-encode" in str(refused.value) and ("?" not in url or CANARY not in str(refused.value)), refused.value


# (the URL as typed on the command line, the start of the one line) of a malformed URL holding a password or key
COMMAND_LINE_URLS = {
    "question_in_pass": (f"'http://u:a?{CANARY}@127.0.0.1:8000/v1'", "the port must be a number"),
    "two_ports": (f"'http://u:{CANARY}@127.0.0.1:9:9/v1'", "the port must be a number"),  # red team round 2: a traceback, exit 1
    # the sixth independent round: exit 0, the part after the quote in manifest.json, the Hydra files and episodes' error
    "quote_in_key": (f'"http://127.0.0.1:8000/v1?password=ab\'{CANARY}"', "holds a space, a quote"),
}


@pytest.mark.parametrize("typed, message", COMMAND_LINE_URLS.values(), ids=COMMAND_LINE_URLS.keys())
def test_a_malformed_url_on_the_command_line_is_one_line_without_its_secret(tmp_path, typed: str, message: str):
    out = memrl_bench(f"results_dir={tmp_path / 'results'}", "llm=openai", "llm.model=m", f"llm.base_url={typed}")
    assert (
        out.returncode == 2 and out.stderr.startswith(f"memrl-bench: error: llm.base_url: {message}") and len(out.stderr.splitlines()) == 1
    ), out.stderr
    assert CANARY not in out.stdout + out.stderr and not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    "overrides, key_in_the_variable",
    [
        (["llm.api_key=KEY"], True),  # Hydra: "Could not override 'llm.api_key' ... +llm.api_key=KEY"
        (["llm.api_key=KEY"], False),  # a key typed, in no variable: known by its shape
        (["embedder.api_key=KEY"], True),
        (["llm.temperature=KEY"], True),  # the setting's check: "got 'KEY'"
        (["llm.seed=KEY", "-m"], True),
        (["llm.api_key_env=MY_KEY", "llm.temperature=KEY"], True),
    ],
)
def test_a_key_in_a_refused_override_is_not_printed(tmp_path, overrides: list[str], key_in_the_variable: bool):
    """47b: the value of $OPENAI_API_KEY in an override Hydra or a setting's check refuses was printed on stderr."""
    key = f"sk-{CANARY}0123456789"
    variable = next((o.partition("=")[2] for o in overrides if o.startswith("llm.api_key_env=")), "OPENAI_API_KEY")
    env = {**os.environ, variable: key if key_in_the_variable else ""}
    args = [f"results_dir={tmp_path / 'results'}", "llm=openai", "llm.model=m", "llm.base_url=http://127.0.0.1:9/v1"]
    args += [o.replace("KEY", key) for o in overrides]
    out = subprocess.run([sys.executable, "-m", "memrl_bench", *args], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 2 and CANARY not in out.stdout + out.stderr, out.stderr


@pytest.mark.parametrize("override", ["llm.temperature=KEY", "llm.max_tokens=KEY", "seed=KEY", "env.n_shots=KEY"])
def test_a_key_in_a_refused_override_is_not_printed_when_only_a_config_file_names_its_variable(tmp_path, override: str):
    """53b: an `api_key_env` named only in a config file was remembered after the settings' checks had quoted the key (got
    '...') and never before Hydra's "Could not override" did; a key of letters only has no key's shape to be known by."""
    key = "plainlettersonlysecretkeyvalueCanary"
    (tmp_path / "conf" / "llm").mkdir(parents=True)
    (tmp_path / "conf" / "llm" / "keyed.yaml").write_text("defaults: [openai, _self_]\napi_key_env: MY_UNUSUAL_TOKEN\nmodel: m\n")
    args = [f"--config-dir={tmp_path / 'conf'}", f"results_dir={tmp_path / 'results'}", "llm=keyed", "llm.base_url=http://127.0.0.1:9/v1"]
    env = {**os.environ, "MY_UNUSUAL_TOKEN": key}
    out = subprocess.run(
        [sys.executable, "-m", "memrl_bench", *args, override.replace("KEY", key)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert out.returncode == 2 and "[redacted]" in out.stderr and "Canary" not in out.stdout + out.stderr, out.stderr


@pytest.mark.parametrize(
    "naming",
    [
        ["llm.api_key_env='MY_UNUSUAL_TOKEN'"],
        ["llm.api_key_env= MY_UNUSUAL_TOKEN"],
        ["llm={name:openai,model:m,api_key_env:MY_UNUSUAL_TOKEN}"],
        ["llm.api_key_env=${oc.env:WHICH_TOKEN}"],
        ["-m", "llm.api_key_env=MY_UNUSUAL_TOKEN,OPENAI_API_KEY"],
        ["llm=keyed_through_a_key"],  # a config file's `api_key_env: ${.which}`
    ],
)
def test_a_key_in_a_refused_override_is_not_printed_whatever_form_names_its_variable(tmp_path, naming: list[str]):
    """54b: only `X.api_key_env=NAME` was read for the variable's name; Hydra reads the name quoted, spaced, in a dict
    override, from `${oc.env:...}`, in a sweep, or through an interpolation of a config file's, and the key was printed."""
    key = "plainlettersonlysecretkeyvalueCanary"
    (tmp_path / "conf" / "llm").mkdir(parents=True)
    keyed = "defaults: [openai, _self_]\nwhich: MY_UNUSUAL_TOKEN\napi_key_env: ${.which}\nmodel: m\n"
    (tmp_path / "conf" / "llm" / "keyed_through_a_key.yaml").write_text(keyed)
    args = [f"--config-dir={tmp_path / 'conf'}", f"results_dir={tmp_path / 'results'}", "llm=openai", "llm.model=m", *naming]
    env = {**os.environ, "MY_UNUSUAL_TOKEN": key, "WHICH_TOKEN": "MY_UNUSUAL_TOKEN"}
    out = subprocess.run(
        [sys.executable, "-m", "memrl_bench", *args, f"llm.tok={key}"], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env
    )
    assert out.returncode == 2 and "[redacted]" in out.stderr and "Canary" not in out.stdout + out.stderr, out.stderr


@pytest.mark.parametrize("secret", ["userinfo", "query_key"])
def test_an_embeddings_endpoint_answering_404_is_one_line_without_url_secrets(tmp_path, secret: str):
    """Before: openai.NotFoundError's traceback (exit 1), after Hydra's "Error executing job with
    overrides: [...]" line holding the password."""
    from tests.helpers import tiny_mmlu

    with FaultServer() as server:
        host = server.base_url.removeprefix("http://").removesuffix("/v1")
        url = f"http://u:{CANARY}@{host}/nope" if secret == "userinfo" else f"http://{host}/nope?key={CANARY}"
        out = memrl_bench(
            f"results_dir={tmp_path / 'results'}",
            "env=mmlu",
            f"env.data_dir={tiny_mmlu(tmp_path / 'mmlu')}",
            "method=none",
            "llm=openai",
            "llm.model=m",
            f"llm.base_url='{server.base_url}'",
            "embedder=openai",
            "embedder.model=e",
            f"embedder.base_url='{url}'",
            f"embedder.cache_path={tmp_path / 'embed.sqlite'}",
            "progress=false",
        )
    assert (
        out.returncode == 3
        and out.stderr.startswith("memrl-bench: stopped: the embeddings server at http://127.0.0.1:")
        and "404" in out.stderr
    ), out.stderr[-2000:]
    assert "Traceback" not in out.stderr and "Error executing job" not in out.stderr and len(out.stderr.splitlines()) == 1, out.stderr[
        -2000:
    ]
    assert CANARY not in out.stdout + out.stderr


def test_a_bug_inside_a_job_prints_no_override_as_typed(tmp_path, monkeypatch, capsys):
    """Any error reaching Hydra made it print "Error executing job with overrides: [...]" unscrubbed;
    now the job itself prints the bug's scrubbed traceback and exits 1."""
    from memrl_bench.cli import main as cli

    def bug(config: dict, run_dir: Path) -> dict:
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli, "run", bug)
    monkeypatch.setattr(
        sys,
        "argv",
        [
            "memrl-bench",
            f"results_dir={tmp_path}",
            "llm=openai",
            "llm.model=m",
            f"llm.base_url=http://u:{CANARY}@127.0.0.1:8000/v1",
            f"hydra.run.dir={tmp_path / 'run'}",
        ],
    )
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")  # main() sets it: restored after the test
    with pytest.raises(SystemExit) as stop:
        cli.main()
    captured = capsys.readouterr()
    assert stop.value.code == 1 and "RuntimeError: a bug" in captured.err and "Error executing job" not in captured.err
    assert CANARY not in captured.out + captured.err


def test_url_secrets_on_the_command_line_are_not_in_the_harness_proc_cmdline(tmp_path):
    """Red team B10: a program run in process mode read llm.base_url=http://u:PASSWORD@... from
    /proc/<ppid>/cmdline (readable by every process). The server reads the harness's cmdline
    while the run is under way, as such a program would."""
    from tests.helpers import tiny_mmlu

    seen: list[bytes] = []
    harness: list[int] = []

    def reply(messages: list) -> str:
        with open(f"/proc/{harness[0]}/cmdline", "rb") as cmdline:
            seen.append(cmdline.read())
        return "Answer: B"

    with FaultServer(reply=reply) as server, FaultServer() as embedder:
        host = server.base_url.removeprefix("http://").removesuffix("/v1")
        args = [
            f"results_dir={tmp_path / 'results'}",
            "env=mmlu",
            f"env.data_dir={tiny_mmlu(tmp_path / 'mmlu')}",
            "method=none",
            "llm=openai",
            "llm.model=m",
            f"llm.base_url='http://u:{CANARY}@{host}/v1'",
            "embedder=openai",
            "embedder.model=e",
            f"embedder.base_url={embedder.base_url}",
            f"embedder.cache_path={tmp_path / 'embed.sqlite'}",
            "llm.cache_mode=off",
            "progress=false",
            "protocol.epochs=1",
        ]
        process = subprocess.Popen(
            [sys.executable, "-m", "memrl_bench", *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "OPENAI_API_KEY": "k"},
        )
        harness.append(process.pid)
        out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err[-2000:]
    assert seen and all(CANARY.encode() not in cmdline and f"{host}/v1".encode() in cmdline for cmdline in seen), seen[:1]
    assert CANARY not in out + err


def test_every_url_secret_form_is_masked_in_the_process_own_cmdline():
    """The same, for key-like query values and malformed passwords: what /proc/self/cmdline shows
    after hide_url_secrets_from_command_line, while sys.argv keeps the values for Hydra."""
    args = [
        f"llm.base_url=http://u:{CANARY}@h:1/v1",
        f"embedder.base_url='http://h:1/v1?api_key={CANARY}&model=1'",
        f"x='http://u:a?{CANARY}@h:1/v1'",
        f"y='http://u:a {CANARY}@h:1/v1'",
        "llm.model=mé",
    ]
    code = (
        "import sys; from memrl_bench.core.redaction import hide_url_secrets_from_command_line as hide; assert hide(); "
        "print(repr(sys.argv[1:])); sys.stdout.flush(); sys.stdout.buffer.write(open('/proc/self/cmdline', 'rb').read())"
    )
    out = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    argv, cmdline = out.stdout.split(b"\n", 1)
    assert argv.decode() == repr(args) and CANARY.encode() not in cmdline
    assert cmdline.split(b"\0")[-6:-2] == [
        b"llm.base_url=http://" + b"*" * 15 + b"h:1/v1",
        b"embedder.base_url='http://h:1/v1?api_key=" + b"*" * 12 + b"&model=1'",
        b"x='http://" + b"*" * 17 + b"h:1/v1'",
        b"y='http://" + b"*" * 17 + b"h:1/v1'",
    ]


# Arguments argparse or Hydra refuse before the job runs, printing them as typed (red team round 2, B8).
REFUSED_BEFORE_THE_JOB = {
    "hash_in_pass": ("llm=openai", "llm.model=m", f"llm.base_url=http://u:a#{CANARY}@127.0.0.1:9/v1"),  # Hydra's LexerNoViableAltException
    "quote_in_pass": ("llm=openai", "llm.model=m", f"llm.base_url=http://u:a'{CANARY}@127.0.0.1:9/v1"),
    "double_quote_in_pass": ("llm=openai", "llm.model=m", f'llm.base_url=http://u:a"{CANARY}@127.0.0.1:9/v1'),
    "interpolation_in_pass": (
        "llm=openai",
        "llm.model=m",
        f"llm.base_url=http://u:${{{CANARY}}}@127.0.0.1:9/v1",
    ),  # "Interpolation key '...' not found"
    "fragment_key": ("llm=openai", "llm.model=m", f"llm.base_url=http://127.0.0.1:9/v1#key={CANARY}"),
    "semicolon_key": ("llm=openai", "llm.model=m", f"llm.base_url=http://127.0.0.1:9/v1;key={CANARY}"),
    "unknown_option": (
        "llm.model=m",
        "--bogus",
        f"llm.base_url=http://u:{CANARY}@127.0.0.1:9/v1",
    ),  # argparse's "unrecognized arguments: ..."
}


@pytest.mark.parametrize("args", REFUSED_BEFORE_THE_JOB.values(), ids=REFUSED_BEFORE_THE_JOB.keys())
def test_an_argument_refused_before_the_job_is_printed_without_its_password(tmp_path, args: tuple[str, ...]):
    out = memrl_bench(f"results_dir={tmp_path / 'results'}", *args)
    assert out.returncode == 2 and out.stderr.strip(), out.stderr
    assert CANARY not in out.stdout + out.stderr, out.stderr


def test_a_scrubbed_stream_redacts_what_the_command_line_holds():
    import io

    from memrl_bench.core.redaction import REDACTED, ScrubbedStream, remember_command_line

    remember_command_line([f"llm.base_url=http://u:a#{CANARY}1@h/v1", f"x=http://u:${{{CANARY}2}}@h/v1", f"y='http://h/v1?code={CANARY}3'"])
    sink = io.StringIO()
    stream = ScrubbedStream(sink)
    stream.write(f"Lexer error: llm.base_url=http://u:a#{CANARY}1@h/v1 ^\n")
    stream.write(f"Interpolation key '{CANARY}2' not found\n")
    stream.write(f"unrecognized arguments: y='http://h/v1?code={CANARY}3'\n")
    assert CANARY not in sink.getvalue() and sink.getvalue().count(REDACTED) >= 2, sink.getvalue()


@pytest.mark.parametrize(
    "key", [f"sk-{CANARY}\r", f"sk-{CANARY}\n", f"sk-{CANARY}\u00e9", f"sk-{CANARY} x"], ids=["cr", "lf", "non_ascii", "space"]
)
def test_an_api_key_no_header_carries_is_one_line_without_it(tmp_path, key: str):
    """The eleventh independent round: a key ending in a line break was filed as an outage (exit 3, "once the server is
    back", the re-run failing alike); one with a non-ASCII character ended in httpx's UnicodeEncodeError traceback."""
    from tests.helpers import tiny_mmlu

    with FaultServer(reply=lambda messages: "Answer: B") as server:
        out = subprocess.run(
            [sys.executable, "-m", "memrl_bench", f"results_dir={tmp_path / 'results'}", "env=mmlu", f"env.data_dir={tiny_mmlu(tmp_path)}"]
            + ["method=none", "llm=openai", "llm.model=m", f"llm.base_url={server.base_url}", "progress=false"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "OPENAI_API_KEY": key},
        )
    assert out.returncode == 2 and out.stderr.startswith("memrl-bench: error: $OPENAI_API_KEY holds a character"), out.stderr[-2000:]
    assert len(out.stderr.splitlines()) == 1 and CANARY not in out.stdout + out.stderr and not (tmp_path / "results").exists()


def test_a_sweep_whose_first_job_fails_to_compose_leaves_no_password_in_its_record(tmp_path):
    """Hydra writes a sweep's record (multirun.yaml, every override as typed) before its first job; a job scrubs it as it
    starts, but a first job that fails to compose (a method no registry knows) ran none, and the record kept the URL's
    password (before 2026-12-06: listed under "Still not defended")."""
    results = tmp_path / "results"
    url = f"llm.base_url=http://u:{CANARY}@127.0.0.1:9/v1"
    out = memrl_bench("-m", f"results_dir={results}", "llm=openai", "llm.model=m", url, "env=llb_db", "method=no_such_method,rag")
    assert out.returncode == 2 and "no_such_method" in out.stderr, out.stderr
    (record,) = results.rglob("multirun.yaml")
    assert "127.0.0.1:9" in record.read_text() and CANARY not in record.read_text() + out.stdout + out.stderr


@pytest.mark.parametrize("quoted", [False, True])
def test_a_password_ended_by_a_full_width_at_sign_is_written_nowhere(tmp_path, quoted):
    """52b: a userinfo ending in '＠' (U+FF20, as a CJK input method types '@'; urllib reads it as '@' once normalized) was
    quoted in the clear by Hydra's lexer (unquoted) or by the URL check (quoted, urllib's NFKC error)."""
    url = f"http://user:{CANARY}\uff20127.0.0.1:9/v1"
    out = memrl_bench(f"results_dir={tmp_path / 'results'}", "llm=openai", "llm.model=m", f"llm.base_url={repr(url) if quoted else url}")
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert CANARY not in out.stdout + out.stderr and not (tmp_path / "results").exists(), out.stderr


CLIENT_ENVIRONMENTS = {  # what the HTTP client reads from the environment as it is built (41b: tracebacks, a password in one)
    "proxy_password_holding_a_slash": ("HTTP_PROXY", f"http://pu:{CANARY}/q@127.0.0.1:9", "InvalidURL"),
    "proxy_of_an_unknown_scheme": ("ALL_PROXY", f"ftp://pu:{CANARY}@127.0.0.1:9/", "ValueError"),
    "socks_proxy_without_its_package": ("ALL_PROXY", f"socks5://pu:{CANARY}@127.0.0.1:9", "ImportError"),
    "proxy_host_left_open": ("https_proxy", f"http://pu:{CANARY}@[::1", "InvalidURL"),
    "proxy_named_in_mixed_case": ("Http_Proxy", f"http://pu:{CANARY}/word@127.0.0.1:9", "InvalidURL"),  # 52b: getproxies reads it
    "certificate_file_missing": ("SSL_CERT_FILE", f"/nonexistent/{CANARY}.pem", "FileNotFoundError"),
}


@pytest.mark.parametrize("variable, value, error", CLIENT_ENVIRONMENTS.values(), ids=CLIENT_ENVIRONMENTS.keys())
def test_a_proxy_or_certificate_setting_the_client_refuses_is_one_line_naming_its_variable(tmp_path, variable, value, error):
    """The thirty-eighth round (41b): a malformed proxy URL, an unknown proxy scheme, a SOCKS proxy without its package or a
    missing certificate file in the environment ended the run in the HTTP client's traceback, exit 1, a proxy's password
    printed in it."""
    args = ("llm=openai", "llm.model=m", "llm.base_url=http://127.0.0.1:9/v1", "env=llb_db", "method=none")
    env = {**os.environ, "OPENAI_API_KEY": "k", variable: value}
    out = subprocess.run(
        [sys.executable, "-m", "memrl_bench", f"results_dir={tmp_path / 'results'}", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert f"({error})" in out.stderr and f"${variable}" in out.stderr, out.stderr
    assert CANARY not in out.stdout + out.stderr and not (tmp_path / "results").exists()
