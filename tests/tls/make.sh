#!/usr/bin/env bash
# Makes the TLS test's certificates (tests/tls.rs): a test CA, a certificate for `localhost`
# and 127.0.0.1 that it signed, and another CA that signed nothing, valid for 100 years.
# Test-only keys; re-run to replace them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 36500 \
    -subj "/CN=crawler test CA" -keyout ca.key -out ca.pem \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj "/CN=localhost" -keyout localhost.key -out localhost.csr
openssl x509 -req -in localhost.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 36500 \
    -out localhost.pem -extfile <(printf '%s\n' \
        "basicConstraints=critical,CA:FALSE" \
        "keyUsage=critical,digitalSignature" \
        "extendedKeyUsage=serverAuth" \
        "subjectAltName=DNS:localhost,IP:127.0.0.1")
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 36500 \
    -subj "/CN=crawler test CA (another)" -keyout other-ca.key -out other-ca.pem \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
rm -f localhost.csr ca.key ca.srl other-ca.key
