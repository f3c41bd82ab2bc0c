"""No secret written anywhere: a canary key passed through every channel (the environment,
URL userinfo, a key in a URL's query, a server's error text) is found in no file or folder
name of the run folder, its .hydra/, the sweep's record, the response and embedding caches,
nor in what the command prints. URL_SHAPES is the corpus of URL forms."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from memrl_bench.core.config import run_name
from memrl_bench.core.redaction import REDACTED, redact_server_text, remember_secret, scrub
from tests.fault_server import Fault, FaultServer

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-canary-0123456789abcdefXYZ"  # in $OPENAI_API_KEY
URL_USER, URL_PASSWORD = "canaryuser", "urlpass-canary-987"  # in llm.base_url and embedder.base_url
CANARIES = (KEY, URL_PASSWORD, URL_USER)


def memrl_bench(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memrl_bench", *args], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)


def files_holding_a_canary(*roots: Path) -> list[str]:
    found = []
    for root in roots:
        for path in [root] if root.is_file() else sorted(root.rglob("*")):
            if path.is_file():
                data = path.read_bytes()
                found += [f"{path}: {c}" for c in CANARIES if c.encode() in data]
    return found


@pytest.fixture
def environment(monkeypatch) -> dict[str, str]:
    if not (ROOT.parent / "shared" / "data" / "mmlu").exists():
        pytest.skip("needs the MMLU data in ../shared/data/mmlu")
    return {**os.environ, "OPENAI_API_KEY": KEY}


def test_a_canary_key_through_every_channel_is_written_nowhere(tmp_path, environment):
    results, caches = tmp_path / "results", tmp_path / "caches"
    with FaultServer(reply=lambda messages: "Answer: B") as server:
        url = server.base_url.replace("http://", f"http://{URL_USER}:{URL_PASSWORD}@")
        leak = f"invalid request with key {KEY} for {url} (Authorization: Bearer {KEY})"
        server.script(*[Fault.http_error(500, message=leak)] * 2)  # one call's attempts: an llm_error episode with that text
        out = memrl_bench(
            "-m",
            f"results_dir={results}",
            "env=mmlu",
            "env.tasks_per_split=2",
            "method=rag",
            "llm=openai",
            f"llm.base_url={url}",
            "llm.model=fault-server-model",
            "llm.max_retries=1",
            "llm.backoff_base_s=0.01",
            "llm.max_concurrency=1",
            f"llm.cache_path={caches}/llm.sqlite",
            "embedder=openai",
            f"embedder.base_url={url}",
            "embedder.model=fault-server-embed",
            f"embedder.cache_path={caches}/embed.sqlite",
            "protocol.epochs=1",
            "seed=0",
            env=environment,
        )
        assert out.returncode == 0, out.stderr
        (folder,) = [p for p in (results / "default").iterdir() if p.is_dir()]
        errors = [json.loads(line).get("error") for line in (folder / "episodes.jsonl").read_text().splitlines()]
        assert any(e and REDACTED in e for e in errors)  # the server's text reached the log, redacted
        assert (folder / ".hydra" / "config.yaml").exists() and (results / "default" / "multirun.yaml").exists()

        server.script(Fault.http_error(401, message=f"Incorrect API key provided: {KEY}"))  # the key refused, mid-run
        refused = memrl_bench(
            f"results_dir={results}",
            "experiment_name=refused",
            "env=mmlu",
            "env.tasks_per_split=2",
            "method=none",
            "llm=openai",
            f"llm.base_url={url}",
            "llm.model=fault-server-model",
            "llm.cache_mode=off",
            "embedder=openai",
            f"embedder.base_url={url}",
            "embedder.model=fault-server-embed",
            "protocol.epochs=1",
            env=environment,
        )
    # stderr is not a terminal here: a progress line tells that the run started, then the one error line
    lines = [line for line in refused.stderr.splitlines() if not re.match(r"\[\d\d:\d\d:\d\d\] ", line)]
    assert refused.returncode == 2 and "Traceback" not in refused.stderr and len(lines) == 1, refused.stderr
    assert "refused the key in $OPENAI_API_KEY (HTTP 401" in refused.stderr and "set a valid key in OPENAI_API_KEY" in refused.stderr
    (stopped,) = (results / "refused").iterdir()
    assert not (stopped / "episodes.jsonl").exists() or not (stopped / "episodes.jsonl").read_text()  # nothing logged
    assert files_holding_a_canary(results, caches) == []
    for printed in (out.stdout, out.stderr, refused.stdout, refused.stderr):
        assert not [c for c in CANARIES if c in printed], printed


def test_userinfo_never_reaches_a_run_name():
    name = run_name(["embedder=openai", f"llm.base_url=http://{URL_USER}:{URL_PASSWORD}@host:8000/v1", "llm.model=m"])
    assert name == "embedder=openai,llm.base_url=http:__host:8000_v1,llm.model=m"
    assert run_name(["llm.base_url=http://host:8000/v1", "llm.model=m"]) == "llm.base_url=http:__host:8000_v1,llm.model=m"


@pytest.mark.parametrize(
    "text, redacted",
    [
        ("Incorrect API key provided: sk-proj-AbCdEf123456.", "Incorrect API key provided: [redacted]."),
        ("Authorization: Bearer abc.def-ghi", "Authorization: [redacted]"),
        ('{"api_key": "k-123456"}', '{"api_key": "[redacted]"}'),
        ("token=tok123 rest", "token=[redacted] rest"),
        ("session 6f1c2b3a4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f90 expired", "session [redacted] expired"),
        ("connect to http://u:p@10.0.0.1:80/v1 failed", "connect to http://10.0.0.1:80/v1 failed"),
        ("HTTP 500: scripted 500", "HTTP 500: scripted 500"),  # nothing key-like: unchanged
    ],
)
def test_server_texts_lose_what_looks_like_a_key(text, redacted):
    assert redact_server_text(text) == redacted


def test_a_remembered_secret_is_scrubbed_from_any_text():
    remember_secret("correct-horse-battery")
    assert scrub("the password correct-horse-battery was sent") == f"the password {REDACTED} was sent"


# ---- every URL form: a corpus of shapes x one canary ------------------------------------------

CANARY = "cnry7731"
# (shape, URL with {c} for the canary and {h} for host:port). Passwords hold , ; @ : / % (the '/'
# percent-encoded: a raw one is refused, below), as typed and percent-encoded; keys in the query.
URL_SHAPES = [
    ("comma", "http://user:{c},x@{h}/v1"),
    ("semicolon", "http://user:{c};x@{h}/v1"),
    ("at", "http://user:{c}@x@{h}/v1"),
    ("colon", "http://user:{c}:x@{h}/v1"),
    ("percent_encoded", "http://user:{c}%40%2C%2Fx@{h}/v1"),
    ("percent_raw", "http://user:{c}%zz@{h}/v1"),
    ("all_of_them", "http://user:a,;@:{c}%2F%25@{h}/v1"),
    ("user_only", "http://{c}@{h}/v1"),
    ("query_key", "http://{h}/v1?key={c}"),
    ("query_api_key", "http://{h}/v1?api_key={c}&model=x"),
    ("query_header_name", "http://{h}/v1?X-Api-Key={c}"),
    ("query_token_and_fragment", "http://{h}/v1?a=1&access_token={c}#top"),
    ("query_signature", "http://{h}/v1?sig={c}"),
    ("query_oauth_code", "http://{h}/v1?code={c}"),  # an OAuth authorization code (red team round 2)
    ("userinfo_and_query", "http://user:{c}@{h}/v1?token={c}"),
    # round 4: camelCase names, ';' as the query separator, a fragment without a query, path parameters
    ("query_camel_access_token", "http://{h}/v1?accessToken={c}"),
    ("query_camel_auth_key", "http://{h}/v1?authKey={c}"),
    ("query_run_together", "http://{h}/v1?clientsecret={c}"),
    ("query_semicolon_separator", "http://{h}/v1?a=1;api_key={c}"),
    ("query_value_holding_semicolon", "http://{h}/v1?token=x;{c}&model=m"),
    ("fragment_token", "http://{h}/v1#access_token={c}"),
    ("path_parameter", "http://{h}/v1;password={c}"),
    # the second independent round: run-together, numbered, bracketed and spaced names
    ("query_session_id", "http://{h}/v1?sessionid={c}"),
    ("query_numbered", "http://{h}/v1?token1={c}&key2={c}"),
    ("query_brackets", "http://{h}/v1?auth[token]={c}&access_token[]={c}"),
    ("query_spaced", "http://{h}/v1?api+key={c}&api%20key={c}"),
    ("query_private_key", "http://{h}/v1?privatekey={c}"),  # the sixth independent round
    # the eighth independent round: short and other credential names
    ("query_passphrase", "http://{h}/v1?passphrase={c}"),
    ("query_pw", "http://{h}/v1?pw={c}&user_pw={c}"),
    ("query_hmac", "http://{h}/v1?hmac={c}"),
    ("query_sid", "http://{h}/v1?sid={c}"),
    ("query_pat", "http://{h}/v1?pat={c}"),
    ("query_otp", "http://{h}/v1?otp={c}"),
    # round 16b: names no list of credential words held; any parameter but a harmless one is redacted now
    ("query_unlisted_names", "http://{h}/v1?api-version=1&passcode={c}&appkey={c}&api_keys={c}"),
    # round 18: a parameter with no name or a name holding '/', a bare one, a key in the path, a user with an empty password
    ("query_no_name", "http://{h}/v1?={c}&a/key={c}"),
    ("query_bare", "http://{h}/v1?model=m&{c}"),
    ("path_key", "http://{h}/sk-{c}0123/v1"),
    ("user_empty_password", "http://{c}:@{h}/v1"),
]
HOST = "127.0.0.1:8000"


@pytest.mark.parametrize("url", [u for _, u in URL_SHAPES], ids=[s for s, _ in URL_SHAPES])
def test_every_url_shape_loses_its_secret_in_names_and_texts(url):
    from memrl_bench.core.redaction import remember_url, strip_url_secrets, url_host

    url = url.format(c=CANARY, h=HOST)
    assert CANARY not in strip_url_secrets(url) and HOST in strip_url_secrets(url)
    assert url_host(url) == HOST
    name = run_name([f"llm.base_url={url}", "llm.model=m@v2"])  # a model name holding '@' keeps its place
    assert CANARY not in name and name.startswith("llm.base_url=http:__127.0.0.1:8000_") and name.endswith(",llm.model=m@v2")
    remember_url(url)
    decoded = url.replace("%40", "@").replace("%2C", ",").replace("%2F", "/").replace("%25", "%")
    hydra_escaped = url.replace(":", "\\:").replace(",", "\\,").replace("=", "\\=")
    for text in (f"failed: {url}", f"connect to {decoded[7:]} refused", f"overrides: [llm.base_url={hydra_escaped}]", f"error at {url!r}"):
        assert CANARY not in scrub(text), text


def test_a_harmless_query_parameter_is_kept_and_any_other_redacted():
    """Round 16b: names no list of credential words held (passcode, appkey, api_keys, masterkey, creds) kept their values;
    now only the parameters known to be harmless are kept."""
    from memrl_bench.core.redaction import REDACTED, strip_url_secrets

    url = "http://host/v1?api-version=2024-06-01&deployment=gpt&API_VERSION=1"
    assert strip_url_secrets(url) == url
    for name in ("passcode", "appkey", "api_keys", "subscriptionKey", "masterkey", "passkey", "creds", "accessKeys", "keyword"):
        assert strip_url_secrets(f"http://host/v1?api-version=1&{name}={CANARY}") == f"http://host/v1?api-version=1&{name}={REDACTED}"


def test_a_canary_in_every_url_shape_is_written_nowhere(tmp_path, monkeypatch):
    """One sweep, one job per URL shape (each its own server, so each run its own folder): the
    canary is in no file or folder name of the results, the caches or what the command prints,
    though every job's first call fails with a server text quoting the URL."""
    from tests.helpers import tiny_mmlu

    data, results, caches = tiny_mmlu(tmp_path / "mmlu"), tmp_path / "results", tmp_path / "caches"
    servers = [FaultServer(reply=lambda messages: "Answer: B") for _ in URL_SHAPES]
    with contextlib.ExitStack() as stack:
        embedder = stack.enter_context(FaultServer())
        urls = []
        for server, (_, shape) in zip(servers, URL_SHAPES):
            stack.enter_context(server)
            urls.append(shape.format(c=CANARY, h=server.base_url.removeprefix("http://").removesuffix("/v1")))
            server.script(*[Fault.http_error(500, message=f"cannot serve {urls[-1]}")] * 2)  # one call's attempts: an llm_error episode
        sweep = ",".join(f"'{url}'" for url in urls)
        out = memrl_bench(
            "-m",
            f"results_dir={results}",
            "env=mmlu",
            f"env.data_dir={data}",
            "method=none",
            "llm=openai",
            f"llm.base_url={sweep}",
            "llm.model=m",
            "llm.max_retries=1",
            "llm.backoff_base_s=0.01",
            "llm.max_concurrency=1",
            f"llm.cache_path={caches}/llm.sqlite",
            "llm.cache_mode=read_write",
            "embedder=openai",
            f"embedder.base_url={embedder.base_url}",
            "embedder.model=e",
            f"embedder.cache_path={caches}/embed.sqlite",
            "protocol.epochs=1",
            env={**os.environ, "OPENAI_API_KEY": KEY},
        )
    assert out.returncode == 0, out.stderr[-3000:]
    folders = [p for p in (results / "default").iterdir() if p.is_dir()]
    assert len(folders) == len(URL_SHAPES)  # every shape ran, into a folder of its own
    errors = [json.loads(line).get("error") or "" for f in folders for line in (f / "episodes.jsonl").read_text().splitlines()]
    assert sum("LLM call to http://127.0.0.1:" in e for e in errors) >= len(URL_SHAPES)  # the harness's own text, with the URL
    named = [str(p) for p in results.rglob("*") if CANARY in p.name]
    holding = [f"{p}" for root in (results, caches) for p in root.rglob("*") if p.is_file() and CANARY.encode() in p.read_bytes()]
    assert named == [] and holding == [], named + holding
    assert CANARY not in out.stdout + out.stderr


def test_a_password_holding_a_raw_slash_is_refused_without_being_printed(tmp_path):
    from tests.helpers import tiny_mmlu

    url = f"http://user:{CANARY}/x@127.0.0.1:9/v1"  # clients would read the host "user" and the port from the password
    out = memrl_bench(
        f"results_dir={tmp_path / 'results'}",
        "env=mmlu",
        f"env.data_dir={tiny_mmlu(tmp_path / 'mmlu')}",
        "method=none",
        "llm=openai",
        f"llm.base_url='{url}'",
        "llm.model=m",
        env=dict(os.environ),
    )
    assert out.returncode == 2 and "llm.base_url: its host is ambiguous" in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert CANARY not in out.stdout + out.stderr and not (tmp_path / "results").exists()


def test_a_bugs_traceback_is_printed_without_url_secrets(monkeypatch, capsys):
    """Anything the CLI does not know as an error is a bug: Python's traceback and exit 1, scrubbed."""
    from memrl_bench.cli import main as cli

    def bug() -> None:
        raise RuntimeError(f"unexpected answer from http://user:{CANARY}@127.0.0.1:8000/v1?api_key={CANARY}")

    monkeypatch.setattr(cli, "app", bug)
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")  # main() sets it: restored after the test
    with pytest.raises(SystemExit) as stop:
        cli.main()
    err = capsys.readouterr().err
    assert (
        stop.value.code == 1
        and err.startswith("Traceback (most recent call last):")
        and "RuntimeError: unexpected answer from http://127.0.0.1:8000/v1?api_key=[redacted]" in err
    )
    assert CANARY not in err


ECHO_KEY = "Zq9Xw/Kp7Lm+Rt2Vb=Yc8dQ"
# the ninth independent round: a server echoing the API key encoded put it in episodes' `error`, the log and the export
ECHOED_FORMS = {
    "percent_encoded": quote(ECHO_KEY, safe=""),
    "json_escaped_slash": ECHO_KEY.replace("/", "\\/"),
    "base64": base64.b64encode(ECHO_KEY.encode()).decode(),
    "base64_inside_basic_auth": base64.b64encode(b"user:" + ECHO_KEY.encode()).decode(),
    "base64_urlsafe_offset": base64.urlsafe_b64encode(b"x" + ECHO_KEY.encode()).decode(),
}


@pytest.mark.parametrize("form", ECHOED_FORMS.values(), ids=ECHOED_FORMS.keys())
def test_a_remembered_key_echoed_encoded_is_redacted(form):
    remember_secret(ECHO_KEY)
    before, after = "invalid credential ", " for this deployment"
    text = redact_server_text(f"{before}{form}{after}")
    assert text.startswith(before) and text.endswith(after) and REDACTED in text, text
    kept = len(text) - len(before) - len(after) - len(REDACTED)  # of the form: what encodes its other text, and the key's edges
    assert kept <= len(form) - len(ECHO_KEY) + 8, text


# the tenth independent round: the same key in other forms of those encodings
ENCODED_OTHERWISE = {
    "percent_lowercase": "Zq9Xw%2fKp7Lm%2bRt2Vb%3dYc8dQ",
    "percent_every_byte": "".join(f"%{b:02x}" for b in ECHO_KEY.encode()),
    "html_entities": "".join(f"&#{ord(c)};" for c in ECHO_KEY),
    "json_unicode_escapes": ECHO_KEY.replace("/", "\\u002f").replace("+", "\\u002b"),
}


@pytest.mark.parametrize("form", ENCODED_OTHERWISE.values(), ids=ENCODED_OTHERWISE.keys())
def test_a_server_text_quoting_a_key_in_any_encoding_keeps_nothing_of_it(form):
    import html
    from urllib.parse import unquote

    remember_secret(ECHO_KEY)
    text = redact_server_text(f"invalid credential {form} for this deployment")
    decoded = unquote(html.unescape(text.replace("\\u002f", "/").replace("\\u002b", "+")))
    assert text.startswith(REDACTED) and ECHO_KEY not in decoded, text
    assert redact_server_text("ordinary text %20 &amp; \\u0041 stays") == "ordinary text %20 &amp; \\u0041 stays"


def test_a_body_that_is_no_completion_quoting_the_key_escaped_keeps_nothing_of_it():
    """The nineteenth round: a 200 answer whose body is no completion, quoting the key with every character a \\uXXXX
    escape, was quoted as bytes' repr (each backslash doubled), which no redaction read as the key: the key reached every
    episode's `error`, the export and stderr."""
    from memrl_bench.llm.client import read_completion

    remember_secret(ECHO_KEY)
    body = json.dumps({"detail": "".join(f"\\u{ord(c):04x}" for c in ECHO_KEY)}, ensure_ascii=True).encode()
    with pytest.raises(Exception) as refused:
        read_completion(body.replace(b"\\\\", b"\\"))
    message = str(refused.value)
    assert "no completion in the answer" in message and REDACTED in message and "\\u" not in message, message


@pytest.mark.parametrize("form", [ECHO_KEY, *ENCODED_OTHERWISE.values()], ids=["plain", *ENCODED_OTHERWISE.keys()])
def test_a_served_model_or_finish_reason_quoting_the_key_keeps_nothing_of_it(form):
    """The twenty-second round: a server listing the key, encoded, as its one model (the model asked for not among them) put
    it in manifest.json and the report; a finish_reason holding the key was stored whole in the log, transcripts and cache."""
    from memrl_bench.llm.client import OpenAIChatModel, read_completion

    remember_secret(ECHO_KEY)
    with FaultServer() as server:
        server.model_ids = [form]
        model = OpenAIChatModel(server.base_url, "not-listed")
        assert model._served_model() == REDACTED
        server.model_ids = ["listed-model"]
        assert model._served_model() == "listed-model"  # a server's one model, named as it is
    body = {"choices": [{"message": {"content": "x"}, "finish_reason": form}]}
    assert read_completion(json.dumps(body).encode())[1] == "other"
    for reason in ("stop", "length", "tool_calls", None):
        assert read_completion(json.dumps({"choices": [{"message": {"content": "x"}, "finish_reason": reason}]}).encode())[1] == reason
