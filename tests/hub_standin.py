"""A local HTTP stand-in for the Hugging Face Hub (huggingface_hub itself stays real, pointed at it by HF_ENDPOINT).

It answers what `HfApi.create_repo`, `create_branch` and `create_commit` call (pushes, recorded in `server.seen`) and
what `from_pretrained`, `hf_hub_download` and `snapshot_download` request to download a model: the repository info
and tree APIs, and `resolve/<revision>/<file>` with the headers huggingface_hub checks (X-Repo-Commit, ETag,
Content-Length), or the Hub's X-Error-Code for a missing repository, revision or file. `serve(server, repo_id,
revision, folder)` publishes a folder's files as one revision of a repository; every request is recorded.
"""

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest


def serve(server, repo_id, revision, folder):
    """Publish every file of `folder` as branch `revision` of `repo_id`; return the revision's commit id (40 hex
    digits, from the files' contents, so that two revisions with different files have different commits)."""
    files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(Path(folder).rglob("*")) if p.is_file()}
    digest = hashlib.sha1()
    for name, data in files.items():
        digest.update(name.encode() + b"\0" + hashlib.sha1(data).digest())
    commit = digest.hexdigest()
    server.repos.setdefault(repo_id, {})[revision] = commit
    server.commits[commit] = files
    return commit


def split_repo_path(parts):
    """('org/name', rest) of a request path's segments, for ids with and without an organisation."""
    for length in (2, 1):
        repo_id = "/".join(parts[:length])
        if len(parts) > length and parts[length] in ("resolve", "revision", "tree"):
            return repo_id, parts[length:]
    return "/".join(parts[:2]), parts[2:]


class HubStandIn(BaseHTTPRequestHandler):
    """Answers pushes (POST) and downloads (HEAD, GET) in the Hub's response format, and records every request (method,
    path, query, Authorization header, body)."""

    def _record(self, body=b""):
        url = urlsplit(self.path)
        self.server.seen.append({"method": self.command, "path": unquote(url.path), "query": parse_qs(url.query),
                                 "auth": self.headers.get("Authorization"), "body": body})
        return url

    def do_POST(self):  # noqa: N802 (http.server's naming)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        url = self._record(body)
        hub = f"http://127.0.0.1:{self.server.server_port}/me/minattn-test"
        if url.path == "/api/repos/create":
            answer = {"url": hub, "name": "me/minattn-test"}
        elif url.path == "/api/validate-yaml":
            answer = {"errors": [], "warnings": []}
        elif "/preupload/" in url.path:
            answer = {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                                for f in json.loads(body)["files"]]}
        elif "/commit/" in url.path:
            answer = {"commitUrl": f"{hub}/commit/{'a' * 40}", "commitOid": "a" * 40,
                      "pullRequestUrl": f"{hub}/discussions/1"}
        elif "/branch/" in url.path:
            answer = {}
        else:
            self.send_error(404, f"the stand-in does not serve {url.path}")
            return
        self._json(answer)

    def do_HEAD(self):  # noqa: N802
        self._download(with_body=False)

    def do_GET(self):  # noqa: N802
        self._download(with_body=True)

    def _download(self, with_body):
        """resolve/<revision>/<file>, api/models/<id>[/revision/<revision>], api/models/<id>/tree/<revision>[/<path>]."""
        url = self._record()
        parts = [unquote(p) for p in url.path.strip("/").split("/")]
        api = parts[:2] == ["api", "models"]
        repo_id, rest = split_repo_path(parts[2:] if api else parts)
        if repo_id not in self.server.repos:
            return self._error("RepoNotFound", with_body)
        revision = rest[1] if len(rest) > 1 else "main"
        commit = self.server.repos[repo_id].get(revision, revision if revision in self.server.commits else None)
        if commit is None:
            return self._error("RevisionNotFound", with_body)
        files = self.server.commits[commit]
        if not api and rest[:1] == ["resolve"]:
            return self._file(files, "/".join(rest[2:]), commit, with_body)
        if api and rest[:1] == ["tree"]:
            folder = "/".join(rest[2:])
            entries = [{"type": "file", "path": name, "size": len(data), "oid": hashlib.sha1(data).hexdigest()}
                       for name, data in files.items() if not folder or name.startswith(folder + "/")]
            return self._json(entries, with_body) if entries else self._error("EntryNotFound", with_body, commit)
        if api and rest[:1] in ([], ["revision"]):
            return self._json({"id": repo_id, "modelId": repo_id, "sha": commit, "private": False,
                               "siblings": [{"rfilename": name} for name in files]}, with_body)
        self.send_error(404, f"the stand-in does not serve {url.path}")

    def _file(self, files, name, commit, with_body):
        if name not in files:
            return self._error("EntryNotFound", with_body, commit)
        data = files[name]
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
        self.send_header("X-Repo-Commit", commit)
        self.end_headers()
        if with_body:
            self.wfile.write(data)

    def _error(self, code, with_body, commit=None):
        """A 404 with the Hub's X-Error-Code, which huggingface_hub turns into RepositoryNotFoundError,
        RevisionNotFoundError or RemoteEntryNotFoundError."""
        data = json.dumps({"error": code}).encode()
        self.send_response(404)
        self.send_header("X-Error-Code", code)
        if commit:
            self.send_header("X-Repo-Commit", commit)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if with_body:
            self.wfile.write(data)

    def _json(self, answer, with_body=True):
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if with_body:
            self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def hub():
    """The stand-in, listening on a free local port: `server.seen` (requests), `server.repos` ({id: {branch:
    commit}}) and `server.commits` ({commit: {file: bytes}})."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), HubStandIn)
    server.seen, server.repos, server.commits = [], {}, {}
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
