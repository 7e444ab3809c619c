"""pyspark imported from the installed package, not from the zip of it that Spark puts first on
its Python workers' path (``neardup.engines.spark.pyspark_path``)."""

import os
import subprocess
import sys

import pytest

from neardup.engines.spark.pyspark_path import installed_pyspark_first


def _installation(root):
    """A pip-style pyspark installation under ``root``: (its site folder, its zip)."""
    site = root / "site"
    lib = site / "pyspark" / "python" / "lib"
    lib.mkdir(parents=True)
    (site / "pyspark" / "__init__.py").write_text("")
    (lib / "pyspark.zip").write_bytes(b"")
    return str(site), str(lib / "pyspark.zip")


def test_the_zip_of_the_installed_package_goes_behind_it(tmp_path):
    site, zipped = _installation(tmp_path)
    path = [zipped, "/py4j.zip", "/elsewhere", site]
    installed_pyspark_first(path)
    assert path == ["/py4j.zip", "/elsewhere", site, zipped]


def test_a_zip_of_another_installation_or_before_its_package_stays(tmp_path):
    site, zipped = _installation(tmp_path)
    for path in (
        [site, zipped],  # the package already comes first
        [zipped, "/elsewhere"],  # its package is not on the path
        ["/spark-home/python/lib/pyspark.zip", site],  # a Spark home of its own: the JVM's
        [str(tmp_path / "pyspark.zip"), site],
        ["/elsewhere", site],
    ):
        before = list(path)
        installed_pyspark_first(path)
        assert path == before
    os.remove(os.path.join(site, "pyspark", "__init__.py"))  # the folder is no package
    path = [zipped, site]
    installed_pyspark_first(path)
    assert path == [zipped, site]


def test_a_worker_path_imports_the_installed_pyspark():
    """With Spark's worker path (pyspark's zips first), importing the engine, as the daemon's
    ``python -m`` does, leaves pyspark and its worker module to the installed package."""
    pyspark = pytest.importorskip("pyspark")
    lib = os.path.join(os.path.dirname(pyspark.__file__), "python", "lib")
    zips = sorted(os.path.join(lib, name) for name in os.listdir(lib) if name.endswith(".zip"))
    if not any(name.endswith("pyspark.zip") for name in zips):
        pytest.skip("this pyspark ships no pyspark.zip")
    code = (
        "import neardup.engines.spark.session, pyspark, pyspark.worker;"
        "print(pyspark.__file__); print(pyspark.worker.__file__)"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(zips))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    files = out.stdout.split()
    assert len(files) == 2 and not any(".zip" in f for f in files), files
    assert files[0] == pyspark.__file__
    # Without the engine's import, the same path gives the zip's pyspark.
    plain = subprocess.run(
        [sys.executable, "-c", "import pyspark; print(pyspark.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    assert "pyspark.zip" in plain.stdout
