"""The boundaries of `hf-minattn view` and `hf-minattn compare`: the view takes its port before it loads a model, ends
a Ctrl-C while loading in one line, answers only requests naming this machine when it listens on a loopback address,
and serves no file outside its folder through a symbolic link; compare names every row after its own folder (two
folders of one name included), refuses one folder, a missing one, and an --out holding a compare.html of the user's,
and a rerun leaves none of the earlier run's figures behind. No model is loaded: a folder with report.html alone is
served, and compare reads hand-written probes.json files."""

import http.client
import json
import os
import socket
import threading

import pytest
from test_compare_inputs import probes

from hf_minattn.cli import main
from hf_minattn.probes import serve
from hf_minattn.probes.cli import row_names


def probe_folder(path):
    path.mkdir(parents=True)
    (path / "probes.json").write_text(json.dumps(probes()))
    return str(path)


def compare(*argv):
    return main(["compare", *map(str, argv)])


def test_two_folders_of_one_name_each_get_a_row(tmp_path, monkeypatch):
    """x/a and a were both keyed "a": the second overwrote the first, and compare wrote one row without a word."""
    monkeypatch.chdir(tmp_path)
    probe_folder(tmp_path / "x" / "a")
    probe_folder(tmp_path / "a")
    assert compare("x/a", "a", "--out", "o", "--figure-format", "svg") == 0
    page = (tmp_path / "o" / "compare.html").read_text()
    assert "<td>x/a</td>" in page and f"<td>{tmp_path.name}/a</td>" in page
    assert row_names(["x/a", "a", "b"]) == ["x/a", f"{tmp_path.name}/a", "b"]  # a name no other has stays short
    assert row_names(["/m/x/a", "/n/x/a"]) == ["m/x/a", "n/x/a"]


def test_compare_refuses_one_folder_and_names_a_missing_one(tmp_path, capsys):
    a = probe_folder(tmp_path / "a")
    assert compare(a, "--out", tmp_path / "o") == 2
    assert capsys.readouterr().err.splitlines() == [
        f"hf-minattn compare: error: compare needs two or more probe folders, got one ({a}); its own report.html "
        "shows one probe"]
    assert compare(a, tmp_path / "notthere", "--out", tmp_path / "o") == 2
    assert capsys.readouterr().err.splitlines() == [
        f"hf-minattn compare: error: {tmp_path / 'notthere'} does not exist; expected a folder written by "
        "`hf-minattn probe`"]
    assert not (tmp_path / "o").exists()


def test_compare_refuses_an_out_holding_the_users_compare_html(tmp_path, capsys):
    a, b = probe_folder(tmp_path / "a"), probe_folder(tmp_path / "b")
    out = tmp_path / "o"
    out.mkdir()
    (out / "compare.html").write_text("<html><head><title>my notes</title></head></html>")
    assert compare(a, b, "--out", out) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"hf-minattn compare: error: --out '{out}' holds a compare.html that `hf-minattn compare` did not write, so "
        "compare would replace it; pass another --out, or move or remove it"]
    assert (out / "compare.html").read_text() == "<html><head><title>my notes</title></head></html>"
    assert sorted(p.name for p in out.iterdir()) == ["compare.html"]  # no figure was drawn either


def test_a_rerun_replaces_its_own_page_and_leaves_no_stale_figure(tmp_path):
    a, b = probe_folder(tmp_path / "a"), probe_folder(tmp_path / "b")
    out = tmp_path / "o"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert compare(a, b, "--out", out, "--figure-format", "both") == 0
    assert '<meta name="generator" content="hf-minattn compare">' in (out / "compare.html").read_text()
    assert {"compare_geometry.png", "compare_benchmarks.png"} <= {p.name for p in out.iterdir()}
    assert compare(a, b, "--out", out, "--figure-format", "svg") == 0  # its own page: replaced, not refused
    assert sorted(p.name for p in out.iterdir()) == ["compare.html", "compare_benchmarks.svg", "compare_geometry.svg",
                                                     "notes.txt"]
    assert (out / "notes.txt").read_text() == "mine"


@pytest.fixture
def page_folder(tmp_path):
    """A probe folder's report.html, a link to a file outside it, a link to a folder outside it, a link inside."""
    folder, outside = tmp_path / "served", tmp_path / "outside"
    folder.mkdir(), outside.mkdir()
    (folder / "report.html").write_text("<!doctype html><html><body>report</body></html>")
    (outside / "secret.txt").write_text("secret")
    os.symlink(outside / "secret.txt", folder / "leak.txt")
    os.symlink(outside, folder / "elsewhere")
    os.symlink(folder / "report.html", folder / "same.html")
    return folder


@pytest.fixture
def served(page_folder, request):
    """A view server on a free port of `request.param` (the --host), serving page_folder: yields (its port, a
    function (method, path, Host header) -> (status, body))."""
    server = serve.make_server(request.param, 0, str(page_folder), None)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]

    def ask(method, path, host):
        client = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            client.request(method, path, headers={"Host": host})
            answer = client.getresponse()
            return answer.status, answer.read()
        finally:
            client.close()
    try:
        yield port, ask
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("served", ["127.0.0.1"], indirect=True)
def test_on_loopback_a_request_naming_another_host_is_refused(served):
    port, ask = served
    for method, path in (("GET", "/report.html"), ("GET", "/api/info"), ("HEAD", "/report.html"), ("GET", "/")):
        status, body = ask(method, path, "attacker.example")
        assert status == 403 and b"report" not in body, (method, path)
    assert ask("GET", "/report.html", f"attacker.example:{port}")[0] == 403
    status, body = ask("GET", "/api/info", "attacker.example")
    assert json.loads(body)["error"] == ("Host 'attacker.example' is not a name of this machine; open the view at "
                                         f"http://127.0.0.1:{port}/")
    for host in (f"127.0.0.1:{port}", "127.0.0.1", f"localhost:{port}", f"LocalHost:{port}", f"[::1]:{port}"):
        assert ask("GET", "/report.html", host) == (200, b"<!doctype html><html><body>report</body></html>"), host


@pytest.mark.parametrize("served", ["0.0.0.0"], indirect=True)
def test_bound_beyond_this_machine_any_host_is_answered(served):
    """--host 0.0.0.0 is asked for (and warned about): other machines reach it by names of their own."""
    port, ask = served
    assert ask("GET", "/report.html", "attacker.example")[0] == 200


@pytest.mark.parametrize("served", ["127.0.0.1"], indirect=True)
def test_a_symbolic_link_out_of_the_folder_is_not_served(served):
    port, ask = served
    host = f"127.0.0.1:{port}"
    for path in ("/leak.txt", "/elsewhere/secret.txt", "/elsewhere/", "/../outside/secret.txt"):
        status, body = ask("GET", path, host)
        assert status == 404 and b"secret" not in body, path
    assert ask("HEAD", "/leak.txt", host)[0] == 404
    assert ask("GET", "/same.html", host)[0] == 200  # a link that stays in the folder is served


def occupied_port():
    """A socket listening on a free port of 127.0.0.1: (the socket, its port)."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    return taken, taken.getsockname()[1]


def test_a_port_in_use_is_said_before_any_model_loads(page_folder, monkeypatch):
    """A Hub model downloaded, and only then did view say the port was taken."""
    loads = []
    monkeypatch.setattr(serve, "prepare", lambda *args: loads.append(args) or pytest.fail("prepare ran"))
    taken, port = occupied_port()
    with taken, pytest.raises(ValueError, match=f"^--host 127.0.0.1 --port {port}: cannot serve there "):
        serve.view_main([str(page_folder), "--port", str(port), "--serve-for", "1"])
    assert loads == []


def test_ctrl_c_while_the_model_loads_ends_in_one_line(page_folder, monkeypatch, capsys):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(serve, "prepare", interrupted)
    taken, port = occupied_port()
    taken.close()  # a free port, taken by the view below
    assert serve.view_main([str(page_folder), "--port", str(port), "--serve-for", "1"]) == 130
    captured = capsys.readouterr()
    assert captured.err.splitlines() == ["[view] interrupted before serving; nothing was served"]
    assert "stopped" not in captured.out
    with socket.socket() as again:  # the view let its port go
        again.bind(("127.0.0.1", port))
