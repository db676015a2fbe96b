"""Where a named model's files come from: a local folder, or a Hub id as `from_pretrained` takes it (at a branch, tag
or commit), and one line saying why it cannot be fetched.

`find_model` fetches the id's config.json before anything else, so that a wrong id, a wrong revision, a repository
without config.json or a Hub out of reach fails at once, before any output folder is made. huggingface_hub's own
exceptions (and transformers' OSError raised from one) are turned into a FileNotFoundError or PermissionError naming
the id and the revision; `hf-minattn` and `run_mlm.py` print that in one line (`hf_minattn.cli.run_reporting_errors`).
"""

import importlib
import os
from contextlib import contextmanager
from dataclasses import dataclass

from huggingface_hub import constants, hf_hub_download
from huggingface_hub.errors import (DisabledRepoError, GatedRepoError, HFValidationError, HfHubHTTPError,
                                    LocalEntryNotFoundError, OfflineModeIsEnabled, RemoteEntryNotFoundError,
                                    RepositoryNotFoundError, RevisionNotFoundError)
from huggingface_hub.utils import validate_repo_id

from hf_minattn.checks import read_json_object


def transport_errors(modules=("httpx2", "httpx")) -> tuple:
    """The `TransportError` class of each of `modules` that imports. huggingface_hub 2 sends its requests with httpx2,
    1.x with httpx; where both are installed, the one importable first is not necessarily the one it uses: catch both."""
    found = []
    for name in modules:
        try:
            found.append(importlib.import_module(name).TransportError)
        except (ImportError, AttributeError):
            continue
    return tuple(found)


TRANSPORT_ERRORS = transport_errors()  # huggingface_hub needs one of them: never empty
TransportError = TRANSPORT_ERRORS[0]  # the name this module exported when it caught one class only


@dataclass(frozen=True)
class ModelSource:
    """A model named by the user: `name` as given; `folder`, a local folder holding its config.json (the folder itself,
    or the Hub cache's snapshot of `commit`); `revision` as asked for and `commit` it resolved to (None for a folder)."""

    name: str
    folder: str
    revision: str | None = None
    commit: str | None = None

    @property
    def is_hub(self) -> bool:
        return self.commit is not None

    @property
    def label(self) -> str:
        """The model's name in reports: the folder's name, or the Hub id with @revision when one was asked for."""
        if not self.is_hub:
            return folder_name(self.name)
        return f"{self.name}@{self.revision}" if self.revision else self.name

    def pretrained(self) -> dict:
        """`from_pretrained`'s first argument and revision: the Hub id pinned to the commit that `revision` pointed
        at when it was found (every file from the same commit), or the folder."""
        if self.is_hub:
            return {"pretrained_model_name_or_path": self.name, "revision": self.commit}
        return {"pretrained_model_name_or_path": self.folder}


def folder_name(path) -> str:
    """A folder's name for reports; packaged models often live in a folder called just "model": keep its parent."""
    parts = os.path.normpath(str(path)).split(os.sep)
    return os.path.join(*parts[-2:]) if parts[-1] == "model" and len(parts) > 1 else parts[-1]


# What a tokenizer's save_pretrained() leaves in its folder, one of them at least (fast, WordPiece, BPE, SentencePiece)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "tokenizer.model",
                   "spiece.model", "sentencepiece.bpe.model")


def holds_tokenizer(folder) -> bool:
    """Whether `folder` holds one of TOKENIZER_FILES."""
    return any(os.path.isfile(os.path.join(folder, name)) for name in TOKENIZER_FILES)


# The tokenizer's files that hold JSON objects: transformers' error on one cut short (by a copy, or a kill while
# saving) is json's alone, "Expecting value: line 225 column 14 (char 4000)", naming no file
TOKENIZER_JSON_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                        "vocab.json")


def check_tokenizer_json(folder, what: str) -> None:
    """A ValueError naming `what` and the file for a tokenizer file in `folder` (where it is a local folder, not a
    Hub id yet to be fetched) that is not a JSON object."""
    for name in TOKENIZER_JSON_FILES if os.path.isdir(folder) else ():
        if os.path.isfile(os.path.join(folder, name)):
            read_json_object(os.path.join(folder, name), what)


def hub_id_problem(name: str) -> str | None:
    """Why `name` is not a Hub repository id ('name' or 'org/name'), as huggingface_hub validates one; None if it is."""
    try:
        validate_repo_id(name)
    except HFValidationError as error:
        return _first_line(error)
    return None


def is_hub_id(name: str) -> bool:
    """Whether `name` reads as a Hub repository id ('name' or 'org/name')."""
    return hub_id_problem(name) is None


def require_hub_id(name: str, what: str) -> None:
    """A ValueError naming `what` (e.g. "REPO_ID") and `name` when the Hub would refuse `name` as a repository id."""
    problem = hub_id_problem(name)
    if problem is not None:
        raise ValueError(f"{what} {name!r} is not a valid Hub repository id: expected 'name' or 'user/name', each "
                         f"part at most 96 letters, digits, '-', '_' or '.' ({problem})")


def check_push_target(hub_model_id: str | None, output_dir: str) -> None:
    """--push_to_hub's repository, checked when the flags are parsed: transformers' Trainer creates it only after the
    data is read and the tokenizer trained, and there a bad id or an offline Hub ends the run. Its default name is the
    --output_dir folder's, as the Trainer takes it."""
    name = hub_model_id or os.path.basename(os.path.abspath(output_dir))
    require_hub_id(name, "--hub_model_id" if hub_model_id else "--push_to_hub's repository (the --output_dir folder's "
                   "name; give --hub_model_id)")
    if constants.is_offline_mode():
        raise ValueError("--push_to_hub uploads to the Hub, and HF_HUB_OFFLINE is set: unset it, or drop --push_to_hub "
                         "and upload the folder later with `hf-minattn push`")


def require_folder_or_hub_id(name: str, what: str, holding: str = "") -> None:
    """A FileNotFoundError naming `what` (e.g. "--tokenizer_name") when `name` is neither a local folder nor a Hub
    id, which from_pretrained would only report after trying the Hub (an existing file, whose name often reads as an
    id, would be looked for on the Hub: a ValueError saying it is a file)."""
    if os.path.isfile(name):
        raise ValueError(f"{what} {name!r} is a file; expected a model folder written by save_pretrained(){holding} "
                         "or a Hub id")
    if not os.path.isdir(name) and not is_hub_id(name):
        raise FileNotFoundError(f"{what} {name!r} is not a folder, nor a Hub id ('name' or 'org/name'); pass a folder "
                                f"written by save_pretrained(){holding} or a Hub id")


def find_model(name, revision=None, cache_dir=None, flag="the revision", what="model path") -> ModelSource:
    """The ModelSource of `name`: a local folder written by save_pretrained(), or a Hub id at `revision` (a branch,
    tag or commit; None: the default branch) whose config.json is fetched now (or read from the cache, offline).
    `flag` and `what`: what the errors call `revision` and `name` (the CLI's flags that gave them)."""
    name = str(name)
    if os.path.isdir(name):
        if revision:
            raise ValueError(f"{flag} {revision!r} names a version of a Hub repository, but {name!r} is a local "
                             f"folder; drop {flag} or pass a Hub id")
        if not os.path.isfile(os.path.join(name, "config.json")):
            raise FileNotFoundError(f"{what} {name!r} has no config.json; is it a save_pretrained() folder?")
        return ModelSource(name, name)
    require_folder_or_hub_id(name, what, " (config.json, weights and tokenizer files)")
    with hub_errors(name, revision, cache_dir):
        config = hf_hub_download(name, "config.json", revision=revision, cache_dir=cache_dir)
    folder = os.path.dirname(config)  # the cache's snapshots/<commit>/ folder
    return ModelSource(name, folder, revision, os.path.basename(folder))


# (huggingface_hub's exception, the error the user gets, its message); the first match wins, so a subclass
# (GatedRepoError is a RepositoryNotFoundError) comes before its base.
HUB_FAILURES = (
    (GatedRepoError, PermissionError,
     "{ref} is a gated repository: ask for access at {endpoint}/{name}, then log in (`hf auth login` or HF_TOKEN)"),
    (DisabledRepoError, PermissionError, "{ref} is disabled on the Hub ({endpoint})"),
    (RepositoryNotFoundError, FileNotFoundError,
     "{ref} is not a local folder and was not found on the Hub ({endpoint}): check the id, or pass a local folder "
     "(a private repository also needs `hf auth login` or HF_TOKEN)"),
    (RevisionNotFoundError, FileNotFoundError,
     "{name!r} has no revision {revision!r} on the Hub ({endpoint}); pass an existing branch, tag or commit id"),
    (RemoteEntryNotFoundError, FileNotFoundError, "{ref} has no {file} on the Hub ({endpoint}); is it a transformers model?"),
    ((LocalEntryNotFoundError, OfflineModeIsEnabled), FileNotFoundError,
     "{ref} is not a local folder nor in the local cache ({cache}), and the Hub {unreachable}; fetch it once with the "
     "Hub reachable, or pass a local folder"),
    (HfHubHTTPError, FileNotFoundError, "the Hub ({endpoint}) could not serve {ref}: {cause}"),
)
# A request that got no answer (no connection, a timeout): huggingface_hub lets httpx(2)'s error through from the calls
# that do not fall back on the cache (create_repo, create_commit...), and that error is no OSError: the CLIs would
# print its traceback.
TRANSPORT_FAILURES = (
    (TRANSPORT_ERRORS, ConnectionError, "the Hub ({endpoint}) cannot be reached for {ref} ({cause}); check the network "
     "connection, or HF_ENDPOINT if it is set"),
)


@contextmanager
def hub_errors(name, revision=None, cache_dir=None, failures=HUB_FAILURES + TRANSPORT_FAILURES):
    """Turn a failure to fetch `name` from the Hub (one of huggingface_hub's exceptions, or transformers' OSError
    raised from one) into a one-line error naming the id and the revision; any other error passes unchanged.
    `failures`: which of them to turn (push, which writes, takes only TRANSPORT_FAILURES: the fetching messages
    would not fit)."""
    try:
        yield
    except Exception as error:
        for cause in _chain(error):
            for kind, error_type, message in failures:
                if isinstance(cause, kind):
                    fields = _message_fields(name, revision, cache_dir, cause)
                    raise error_type(message.format(**fields)) from error
        raise


def _chain(error):
    """`error` and the exceptions it was raised from (or while handling), outermost first."""
    seen = []
    while error is not None and error not in seen:
        seen.append(error)
        error = error.__cause__ or error.__context__
    return seen


def _message_fields(name, revision, cache_dir, cause) -> dict:
    endpoint = constants.ENDPOINT
    # huggingface_hub raises LocalEntryNotFoundError from the connection error: that one says what went wrong
    unreachable = ("cannot be reached (offline: HF_HUB_OFFLINE is set)" if constants.is_offline_mode()
                   else f"({endpoint}) cannot be reached ({_first_line(cause.__cause__ or cause)})")
    return {"ref": repr(name) + (f" at revision {revision!r}" if revision else ""), "name": name,
            "revision": revision, "endpoint": endpoint, "cache": cache_dir or constants.HF_HUB_CACHE,
            "file": _file_of(cause), "unreachable": unreachable, "cause": _first_line(cause)}


def _first_line(error) -> str:
    """The first line of an error's message (huggingface_hub's run over several), with its type when it has none."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def _file_of(error) -> str:
    """The file a RemoteEntryNotFoundError's request asked for (the part of the URL after resolve/<revision>/)."""
    url = str(getattr(getattr(error, "response", None), "url", "") or "")
    return url.split("/resolve/", 1)[1].split("/", 1)[-1] if "/resolve/" in url else "such file"
