"""Drives Keel's cloud credentials engine over HTTPS with hvac (Debian python3-hvac 0.11), with the
engine on its defaults: the embedded cloud at Keel's own address.

Usage: hvac_aws_tls.py <keel url> <token> <CA file the client trusts>
Prints one JSON object with what each call returned, or the error each call raised.
"""
import json
import sys

import hvac

url, token, ca = sys.argv[1:4]
client = hvac.Client(url=url, token=token, verify=ca)
aws = client.secrets.aws
out = {}
policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}


def attempt(name, call):
    """Records what `call` returned under `name`, or the errors it raised."""
    try:
        out[name] = call()
    except hvac.exceptions.VaultError as e:
        out[name] = {"errors": e.errors}


aws.create_or_update_role(name="dev", credential_type="iam_user", policy_document=policy)
aws.create_or_update_role(name="fed", credential_type="federation_token", policy_document=policy)
attempt("creds", lambda: aws.generate_credentials(name="dev"))
attempt("sts", lambda: aws.generate_credentials(name="fed", endpoint="sts", ttl="900s"))
lease_id = out["creds"].get("lease_id")
if lease_id:
    attempt("renewed", lambda: client.sys.renew_lease(lease_id=lease_id, increment=7200))
    attempt("revoked", lambda: client.sys.revoke_lease(lease_id=lease_id).status_code)
print(json.dumps(out))
