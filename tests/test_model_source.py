"""hf_minattn.model_source: which HTTP library's "no answer" errors become one line naming the Hub."""

import subprocess
import sys
import textwrap

from hf_minattn.model_source import TRANSPORT_ERRORS, TRANSPORT_FAILURES, hub_errors, transport_errors

# A fresh interpreter in which an `httpx` stands beside the installed library (httpx2 for huggingface_hub 2), as on a
# machine with both: an error of either must become the ConnectionError naming the Hub.
BOTH_LIBRARIES = textwrap.dedent(
    """
    import sys, types
    import httpx2

    httpx = types.ModuleType("httpx")
    class TransportError(Exception):
        pass
    httpx.TransportError = TransportError
    sys.modules["httpx"] = httpx

    from hf_minattn.model_source import hub_errors

    for error in (httpx2.TransportError("no answer"), httpx.TransportError("no answer")):
        try:
            with hub_errors("me/x"):
                raise error
        except ConnectionError as converted:
            assert "cannot be reached for 'me/x' (no answer)" in str(converted), converted
        else:
            raise AssertionError(f"{type(error).__module__}.TransportError passed through")
    print("both caught")
    """
)


def test_the_transport_errors_of_both_http_libraries_are_caught_where_both_exist():
    """huggingface_hub 1.x sends its requests with httpx, 2 with httpx2; with both installed, only httpx2's error was
    caught (whichever huggingface_hub used)."""
    run = subprocess.run([sys.executable, "-c", BOTH_LIBRARIES], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "both caught" in run.stdout, run.stderr[-2000:]


def test_transport_errors_takes_each_library_that_imports():
    import httpx2

    assert transport_errors(("httpx2", "no_such_http_library")) == (httpx2.TransportError,)
    assert transport_errors(("no_such_http_library",)) == ()
    assert httpx2.TransportError in TRANSPORT_ERRORS and TRANSPORT_FAILURES[0][0] == TRANSPORT_ERRORS
    try:
        with hub_errors("me/x"):
            raise httpx2.ConnectTimeout("timed out")  # a subclass, as huggingface_hub lets it through
    except ConnectionError as error:
        assert "cannot be reached for 'me/x' (timed out)" in str(error)
