"""`hf-minattn view`'s server as a network program: a client that sends nothing or hangs up mid-answer holds up no
one and prints nothing, the browser's favicon request is answered, serving beyond this machine is said out loud, and
a probe folder whose probes.json cannot be read says so as a missing model does. No model is loaded: a folder with
report.html alone is served."""

import json
import socket
import struct
import subprocess
import time
import urllib.error
import urllib.request
from urllib.parse import urlsplit

import pytest
from test_attention_view import view_server

from hf_minattn.probes.serve import prepare, view_main


@pytest.fixture
def page_folder(tmp_path):
    """A probe folder's report.html, and a large file: an answer long enough to be cut off by the client."""
    (tmp_path / "report.html").write_text("<!doctype html><html><body>report</body></html>")
    with open(tmp_path / "large.bin", "wb") as f:
        f.truncate(64 * 2**20)  # more than the socket buffers hold: the server is still writing when the client leaves
    return tmp_path


def hang_up_mid_answer(host, port):
    """Ask for the large file, read a little, then reset the connection (SO_LINGER 0), as a closed tab does."""
    client = socket.create_connection((host, port))
    client.sendall(b"GET /large.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")  # a name of this machine: not refused
    client.recv(1024)
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()


def test_a_silent_or_vanishing_client_holds_up_no_one_and_prints_nothing(page_folder):
    with view_server(page_folder, stderr=subprocess.PIPE) as (server, url):
        address = urlsplit(url)
        base = f"{address.scheme}://{address.netloc}/"
        hang_up_mid_answer(address.hostname, address.port)
        idle = socket.create_connection((address.hostname, address.port))  # connects, never sends a byte
        try:
            start = time.monotonic()
            with pytest.raises(urllib.error.HTTPError) as answer:  # no model loaded: a 404 that says so, at once
                urllib.request.urlopen(base + "api/info", timeout=10)
            assert answer.value.code == 404 and "no model loaded" in json.loads(answer.value.read())["error"]
            assert time.monotonic() - start < 5
            assert urllib.request.urlopen(base + "report.html", timeout=10).read().endswith(b"</html>")
            root = urllib.request.urlopen(base, timeout=10)  # a probe folder's root opens its report, not a listing
            assert root.url == base + "report.html" and root.read().endswith(b"report</body></html>")
            favicon = urllib.request.urlopen(base + "favicon.ico", timeout=10)
            assert favicon.status == 204 and favicon.read() == b""
        finally:
            idle.close()
    errors = server.stderr.read()
    assert "Traceback" not in errors and "Error" not in errors, errors


def test_serving_beyond_this_machine_is_said_in_one_line(page_folder, capsys):
    assert view_main([str(page_folder), "--host", "0.0.0.0", "--port", "0", "--serve-for", "0.2"]) == 0
    warnings = [line for line in capsys.readouterr().out.splitlines() if "warning" in line]
    assert len(warnings) == 1 and warnings[0].startswith("[view] warning: --host 0.0.0.0 is not a loopback address")
    for host in ("127.0.0.1", "localhost"):
        assert view_main([str(page_folder), "--host", host, "--port", "0", "--serve-for", "0.2"]) == 0
        assert "warning" not in capsys.readouterr().out


@pytest.mark.parametrize("content, why", [("{not json", "cannot be read (Expecting property name"),
                                          ("[1, 2]", "cannot be read ('list' object"), (None, "is missing")])
def test_a_probes_json_that_cannot_be_read_gets_a_note(page_folder, capsys, content, why):
    """As a probed model that is gone does: the report is served, and the note says why typing is off."""
    if content is not None:
        (page_folder / "probes.json").write_text(content)
    assert prepare(str(page_folder))[1] is None
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith(f"[view] note: {page_folder / 'probes.json'} {why}")
    assert "typed sentences are not encoded unless --model names a model" in out[0]
