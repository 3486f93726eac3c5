"""TLS: a self-signed certificate made at test time with the openssl CLI; curl --cacert and
boto3 verify it; plain HTTP on the TLS port gets nothing useful."""
import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import Server


@pytest.fixture(scope="module")
def tls_server():
    root = tempfile.mkdtemp(prefix="oc-tls-")
    cert = os.path.join(root, "cert.pem")
    key = os.path.join(root, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
    srv = Server("embedded", root, extra_config=f'tls_cert_file = "{cert}"\ntls_key_file = "{key}"\n',
                 cafile=cert)
    srv.start()
    yield srv
    codes = srv.stop()
    shutil.rmtree(root, ignore_errors=True)
    assert codes == [0]


def test_curl_with_cacert(tls_server):
    r = subprocess.run(["curl", "-sS", "--cacert", tls_server.cafile, tls_server.endpoint + "/healthz"],
                       capture_output=True, timeout=30)
    assert r.returncode == 0 and r.stdout == b"ok\n"
    # Without the CA the certificate is refused.
    r = subprocess.run(["curl", "-sS", tls_server.endpoint + "/healthz"], capture_output=True,
                       timeout=30, env={k: v for k, v in os.environ.items()
                                        if k not in ("CURL_CA_BUNDLE", "SSL_CERT_FILE")})
    assert r.returncode != 0


def test_boto3_over_tls(tls_server):
    s3 = tls_server.boto3()
    s3.create_bucket(Bucket="tlsbucket")
    body = os.urandom(3 << 20)
    s3.put_object(Bucket="tlsbucket", Key="k", Body=body)
    assert s3.get_object(Bucket="tlsbucket", Key="k")["Body"].read() == body
    s3.delete_object(Bucket="tlsbucket", Key="k")
    s3.delete_bucket(Bucket="tlsbucket")
