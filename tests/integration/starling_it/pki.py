"""Test certificates made with the ``openssl`` CLI at test time (nothing checked in, nothing
expires): a CA, certificates signed by it, and helpers to read a certificate's DER bytes.

Lifecycle: one ``Pki`` per test (a directory under the test's tmp_path); used from the test
thread only.
"""

from __future__ import annotations

import ssl
import subprocess
from pathlib import Path


class Pki:
    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)

    def _run(self, *args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=self.dir)

    def path(self, name: str) -> Path:
        return self.dir / name

    def make_ca(self, name: str) -> None:
        """``<name>.pem`` / ``<name>.key``: a self-signed CA."""
        self._run(
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
            "-subj", f"/CN={name}", "-keyout", f"{name}.key", "-out", f"{name}.pem",
        )

    def make_cert(self, name: str, cn: str, ca: str, out_dir: Path | None = None,
                  days: int = 2) -> None:
        """``<name>.pem`` / ``<name>.key`` (in ``out_dir``, default the PKI dir): CN ``cn``,
        SAN 127.0.0.1 and localhost, signed by CA ``ca``, valid for ``days``."""
        out = Path(out_dir or self.dir)
        (self.dir / f"{name}.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        self._run(
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", f"/CN={cn}",
            "-keyout", str(out / f"{name}.key"), "-out", f"{name}.csr",
        )
        self._run(
            "x509", "-req", "-days", str(days), "-in", f"{name}.csr", "-CA", f"{ca}.pem",
            "-CAkey", f"{ca}.key", "-CAcreateserial", "-extfile", f"{name}.ext",
            "-out", str(out / f"{name}.pem"),
        )

    def not_after(self, pem: Path) -> float:
        """The certificate's notAfter in seconds since the epoch."""
        out = subprocess.run(
            ["openssl", "x509", "-in", str(pem), "-noout", "-enddate"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
        return float(ssl.cert_time_to_seconds(out.split("=", 1)[1]))

    def der(self, pem: Path) -> bytes:
        """The DER bytes of a PEM certificate (what ``getpeercert(binary_form=True)`` gives)."""
        return subprocess.run(
            ["openssl", "x509", "-in", str(pem), "-outform", "DER"],
            check=True, capture_output=True,
        ).stdout
