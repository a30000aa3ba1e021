"""Drives Keel's certificate authority engine with the real hvac client; prints JSON results."""
import json
import subprocess
import sys

import hvac

url, token = sys.argv[1], sys.argv[2]
client = hvac.Client(url=url, token=token)
pki = client.secrets.pki
out = {}

# mount tuning, as `vault secrets tune -max-lease-ttl=87600h pki` does it
client.sys.tune_mount_configuration(path="pki", max_lease_ttl="87600h")
out["tuned"] = client.sys.read_mount_configuration(path="pki")["data"]["max_lease_ttl"]
root = pki.generate_root(type="internal", common_name="Keel hvac Root", extra_params={"key_type": "ec", "ttl": "700h"})
out["root_serial"] = root["data"]["serial_number"]
pki.set_urls({"issuing_certificates": [url + "/v1/pki/ca"], "crl_distribution_points": [url + "/v1/pki/crl"]})
pki.create_or_update_role("web", extra_params={"allowed_domains": "example.com", "allow_subdomains": True, "key_type": "ec", "ttl": "1h"})
out["role"] = pki.read_role("web")["data"]
out["roles"] = pki.list_roles()["data"]["keys"]
# a write sent with PUT, as `vault write` and the reference's Go client send it
client.adapter.put("/v1/pki/roles/put", json={"allowed_domains": "example.org", "key_type": "ec"})
out["put_role"] = pki.read_role("put")["data"]["allowed_domains"]
issued = pki.generate_certificate("web", common_name="www.example.com", extra_params={"alt_names": "api.example.com"})
out["issued"] = {k: issued["data"][k] for k in ("serial_number", "private_key_type", "expiration")}
csr = subprocess.run(
    ["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "/dev/null", "-subj", "/CN=csr.example.com"],
    capture_output=True, text=True, check=True,
).stdout
signed = pki.sign_certificate("web", csr=csr, common_name="csr.example.com")
out["signed_serial"] = signed["data"]["serial_number"]
verbatim = pki.sign_verbatim(csr=csr, name="web")
out["verbatim_serial"] = verbatim["data"]["serial_number"]
out["revoked"] = pki.revoke_certificate(issued["data"]["serial_number"])["data"]
out["read_cert"] = pki.read_certificate(issued["data"]["serial_number"])["data"]["revocation_time"]
out["ca_pem"] = pki.read_ca_certificate()
out["ca_chain"] = pki.read_ca_certificate_chain()
out["crl_pem"] = pki.read_crl()
out["crl_config"] = pki.read_crl_configuration()["data"]
out["rotate"] = pki.rotate_crl()["data"]
out["certs"] = pki.list_certificates()["data"]["keys"]
try:
    pki.generate_certificate("web", common_name="evil.org")
except hvac.exceptions.InvalidRequest as e:
    out["denied"] = e.errors
pki.delete_role("web")
try:
    pki.read_role("web")
except hvac.exceptions.InvalidPath:
    out["role_gone"] = True
print(json.dumps(out))
