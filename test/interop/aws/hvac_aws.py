"""Drives Keel's cloud credentials engine with hvac (Debian python3-hvac 0.11), as a Vault user would.

Usage: hvac_aws.py <keel url> <token> <access key> <secret key> <iam endpoint> <sts endpoint>
Prints one JSON object with what each call returned.
"""
import json
import sys

import hvac
from hvac.exceptions import InvalidPath, InvalidRequest

url, token, ak, sk, iam, sts = sys.argv[1:7]
client = hvac.Client(url=url, token=token)
aws = client.secrets.aws
out = {}

r = aws.configure_root_iam_credentials(access_key=ak, secret_key=sk, region="us-east-1", iam_endpoint=iam, sts_endpoint=sts)
out["configure_root_status"] = r.status_code
out["root"] = client.read("aws/config/root")["data"]
r = aws.configure_lease(lease="1h", lease_max="24h")
out["lease"] = aws.read_lease_config()["data"]
policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
aws.create_or_update_role(name="dev", credential_type="iam_user", policy_document=policy)
aws.create_or_update_role(name="fed", credential_type="federation_token", policy_document=policy)
out["role"] = aws.read_role(name="dev")["data"]
out["roles"] = aws.list_roles()["data"]["keys"]
creds = aws.generate_credentials(name="dev")
out["creds"] = {"lease_id": creds["lease_id"], "renewable": creds["renewable"], "lease_duration": creds["lease_duration"], "data": creds["data"]}
fed = aws.generate_credentials(name="fed", endpoint="sts", ttl="900s")
out["fed"] = {"lease_duration": fed["lease_duration"], "renewable": fed["renewable"], "has_token": bool(fed["data"]["session_token"])}
out["lookup"] = client.sys.read_lease(lease_id=creds["lease_id"])["data"]["id"]
renewed = client.sys.renew_lease(lease_id=creds["lease_id"], increment=7200)
out["renewed"] = renewed["lease_duration"]
# renew_lease without an increment sends "increment": null
out["renewed_default"] = client.sys.renew_lease(lease_id=creds["lease_id"])["lease_duration"]
client.sys.revoke_lease(lease_id=creds["lease_id"])
try:
    client.sys.read_lease(lease_id=creds["lease_id"])
    out["lookup_after_revoke"] = "found"
except InvalidRequest as e:
    out["lookup_after_revoke"] = "invalid request"
try:
    aws.generate_credentials(name="missing")
except InvalidRequest as e:
    out["missing_role_errors"] = e.errors
try:
    aws.create_or_update_role(name="bad", credential_type="assumed_role", policy_document=policy)
except InvalidRequest as e:
    out["bad_role_errors"] = e.errors
client.write("aws/static-roles/app", username="app", rotation_period="1h")
out["static_role"] = client.read("aws/static-roles/app")["data"]
out["static_creds"] = client.read("aws/static-creds/app")["data"]
out["static_roles"] = client.list("aws/static-roles")["data"]["keys"]
out["read_missing"] = client.read("aws/roles/nope")
aws.delete_role(name="dev")
try:
    aws.delete_role(name="dev")
    out["delete_missing"] = "ok"
except InvalidPath:
    out["delete_missing"] = "404"
print(json.dumps(out))
