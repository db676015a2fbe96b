"""The version is written once, as `hf_minattn.__version__`: the package metadata reads it from there
(tests/test_wheel.py checks the built wheel's), and `hf-minattn --version` prints it."""

import re

import pytest

import hf_minattn
from hf_minattn.cli import main


def test_version_flag_prints_the_program_and_the_package_version(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"hf-minattn {hf_minattn.__version__}\n"


def test_version_is_a_release_number():
    assert re.fullmatch(r"\d+\.\d+\.\d+", hf_minattn.__version__), hf_minattn.__version__
