"""Drives Keel's system backend, token store and credentials engine through hvac's public client
(Debian python3-hvac 0.11), case by case as hvac's own integration suites exercise a Vault server:
token, policy, lease, mount and the aws secrets engine. Cases that need something Keel does not
serve are adapted (the engine a case mounts) and say so.

Usage: hvac_suites.py <keel url> <root token> <CA file>
Prints one JSON object: {suite: {case: "ok" | "<what failed>"}}.
"""
import json
import os
import sys
import traceback

import hvac
from hvac import exceptions
from hvac.exceptions import ParamValidationError

url, root_token, ca = sys.argv[1:4]
results = {}
ALLOW_ALL = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
DESCRIBE = {"Statement": [{"Action": "ec2:Describe*", "Effect": "Allow", "Resource": "*"}], "Version": "2012-10-17"}


def client():
    return hvac.Client(url=url, token=root_token, verify=ca)


def case(suite, name):
    """Runs the decorated function at once and records "ok" or what failed."""

    def run(fn):
        try:
            fn(client())
            outcome = "ok"
        except AssertionError as e:
            frame = traceback.extract_tb(e.__traceback__)[-1]
            outcome = "assertion at line %d: %s" % (frame.lineno, frame.line)
        except Exception as e:  # any client error is the case's failure, reported as text
            outcome = "%s: %s" % (type(e).__name__, e)
        results.setdefault(suite, {})[name] = outcome
        return fn

    return run


def raises(kinds, call):
    try:
        call()
    except kinds:
        return
    raise AssertionError("expected %r" % (kinds,))


def test_policy(c, name):
    """The policy hvac's suites write: the older `policy = "..."` stanzas, and its parsed form."""
    text = """
    path "sys" {
        policy = "deny"
    }
        path "secret" {
    policy = "write"
    }
    """
    c.sys.create_or_update_policy(name, text)
    return text, {"path": {"sys": {"policy": "deny"}, "secret": {"policy": "write"}}}


# ---- token (hvac tests/integration_tests/api/auth_methods/test_token.py)


@case("token", "auth_token_manipulation")
def _(c):
    created = c.auth.token.create(ttl="1h", renewable=True)
    token = created["auth"]["client_token"]
    assert c.auth.token.lookup(token)["data"]["id"] == token
    assert c.auth.token.renew(token)["auth"]["client_token"] == token
    c.auth.token.revoke(token)
    raises((exceptions.Forbidden, exceptions.InvalidPath, exceptions.InvalidRequest), lambda: c.auth.token.lookup(token))


@case("token", "self_auth_token_manipulation")
def _(c):
    created = c.auth.token.create(ttl="1h", renewable=True)
    token = created["auth"]["client_token"]
    c.token = token
    assert c.auth.token.lookup_self()["data"]["id"] == token
    assert c.auth.token.renew_self()["auth"]["client_token"] == token
    c.auth.token.revoke_self()
    c.token = root_token
    raises((exceptions.Forbidden, exceptions.InvalidPath, exceptions.InvalidRequest), lambda: c.auth.token.lookup(token))


@case("token", "token_accessor")
def _(c):
    created = c.auth.token.create(ttl="1h")
    accessor = created["auth"].get("accessor")
    assert accessor
    looked = c.auth.token.lookup_accessor(accessor)
    assert looked["data"]["accessor"] == accessor
    assert not looked["data"]["id"]
    c.auth.token.revoke_accessor(accessor)
    raises(exceptions.InvalidRequest, lambda: c.auth.token.lookup_accessor(accessor))
    raises(exceptions.Forbidden, lambda: c.auth.token.lookup(created["auth"]["client_token"]))


@case("token", "create_token_explicit_max_ttl")
def _(c):
    created = c.auth.token.create(ttl="30m", explicit_max_ttl="5m")
    assert created["auth"]["lease_duration"] == 300
    token = created["auth"]["client_token"]
    assert c.auth.token.lookup(token)["data"]["id"] == token


@case("token", "create_token_max_ttl")
def _(c):
    created = c.auth.token.create(ttl="5m")
    assert created["auth"]["lease_duration"] == 300
    token = created["auth"]["client_token"]
    assert c.auth.token.lookup(token)["data"]["id"] == token


@case("token", "create_token_periodic")
def _(c):
    created = c.auth.token.create(period="30m")
    assert created["auth"]["lease_duration"] == 1800
    token = created["auth"]["client_token"]
    looked = c.auth.token.lookup(token)
    assert looked["data"]["id"] == token
    assert looked["data"]["period"] == 1800


@case("token", "token_roles")
def _(c):
    raises(exceptions.InvalidPath, lambda: c.auth.token.list_roles())
    assert c.auth.token.create_or_update_role("testrole").status_code == 204
    assert c.auth.token.list_roles()["data"]["keys"] == ["testrole"]
    c.auth.token.delete_role("testrole")
    raises(exceptions.InvalidPath, lambda: c.auth.token.list_roles())


@case("token", "create_token_w_role")
def _(c):
    test_policy(c, "testpolicy")
    assert c.auth.token.create_or_update_role("testrole", allowed_policies="testpolicy").status_code == 204
    created = c.auth.token.create(ttl="1h", role_name="testrole")
    assert created["auth"]["client_token"]
    assert created["auth"]["policies"] == ["default", "testpolicy"]
    c.auth.token.delete_role("testrole")
    c.sys.delete_policy("testpolicy")


# ---- policy (hvac tests/integration_tests/api/system_backend/test_policy.py)

POLICY_NAME = "test-policy-policy"


def create_and_read(c, **kwargs):
    policy = {"path": {"test-path": {"capabilities": ["read"]}}}
    assert bool(c.sys.create_or_update_policy(name=POLICY_NAME, policy=policy, **kwargs))
    assert json.loads(c.sys.read_policy(name=POLICY_NAME)["data"]["rules"]) == policy
    c.sys.delete_policy(name=POLICY_NAME)


@case("policy", "create_or_update_policy_success")
def _(c):
    create_and_read(c)


@case("policy", "create_or_update_policy_pretty_print_false")
def _(c):
    create_and_read(c, pretty_print=False)


@case("policy", "policy_manipulation")
def _(c):
    assert "root" in c.sys.list_policies()["data"]["policies"]
    assert c.get_policy("test") is None
    text, parsed = test_policy(c, "test")
    assert "test" in c.sys.list_policies()["data"]["policies"]
    assert c.sys.read_policy("test")["data"]["rules"] == text
    assert c.get_policy("test", parse=True) == parsed
    c.sys.delete_policy(name="test")
    assert "test" not in c.sys.list_policies()["data"]["policies"]


@case("policy", "json_policy_manipulation")
def _(c):
    assert "root" in c.sys.list_policies()["data"]["policies"]
    c.sys.create_or_update_policy(name="test", policy='path "sys" {\n policy = "deny"\n}\npath "secret" {\n policy = "write"\n}\n')
    assert "test" in c.sys.list_policies()["data"]["policies"]
    c.sys.delete_policy("test")
    assert "test" not in c.sys.list_policies()["data"]["policies"]


# ---- lease (hvac tests/integration_tests/api/system_backend/test_lease.py)
# As hvac's suite does: each case mounts a certificate authority at pki/ (disabling the one there
# first), with a role whose generate_lease makes every certificate it issues a lease, and disables it
# after (hvac's utils.configure_pki and disable_pki).


def with_pki(fn):
    def run(c):
        if "pki/" in c.sys.list_mounted_secrets_engines()["data"]:
            c.sys.disable_secrets_engine("pki")
        c.sys.enable_secrets_engine(backend_type="pki", path="pki")
        try:
            c.write("pki/root/generate/internal", common_name="hvac.com", ttl="8760h")
            c.write(
                "pki/config/urls",
                issuing_certificates="http://127.0.0.1:8200/v1/pki/ca",
                crl_distribution_points="http://127.0.0.1:8200/v1/pki/crl",
            )
            c.write("pki/roles/my-role", allowed_domains="hvac.com", allow_subdomains=True, generate_lease=True, max_ttl="72h")
            fn(c)
        finally:
            c.sys.disable_secrets_engine("pki")

    return run


def issue_leased(c):
    return c.write("pki/issue/my-role", common_name="test.hvac.com")


@case("lease", "read_lease")
@with_pki
def _(c):
    issued = issue_leased(c)
    assert c.sys.read_lease(lease_id=issued["lease_id"])["data"]["id"] == issued["lease_id"]


@case("lease", "list_leases")
@with_pki
def _(c):
    issue_leased(c)
    assert "issue/" in c.sys.list_leases(prefix="pki")["data"]["keys"]


@case("lease", "revoke_lease")
@with_pki
def _(c):
    issued = issue_leased(c)
    assert bool(c.sys.revoke_lease(lease_id=issued["lease_id"]))
    raises(exceptions.InvalidPath, lambda: c.sys.list_leases(prefix="pki"))


@case("lease", "revoke_prefix")
@with_pki
def _(c):
    issued = issue_leased(c)
    assert bool(c.sys.revoke_prefix(prefix=issued["lease_id"]))


@case("lease", "revoke_force")
@with_pki
def _(c):
    issued = issue_leased(c)
    assert bool(c.sys.revoke_force(issued["lease_id"]))


# ---- mount (hvac tests/integration_tests/api/system_backend/test_mount.py)
# hvac mounts kv version 1 and generic engines, which Keel does not serve; the cases mount the
# credentials engine (type aws) in their place.


def with_mount(fn):
    def run(c):
        c.sys.enable_secrets_engine(backend_type="aws", path="kvv1_mount")
        try:
            fn(c)
        finally:
            c.sys.disable_secrets_engine(path="kvv1_mount")

    return run


@case("mount", "secret_backend_manipulation")
@with_mount
def _(c):
    assert "test/" not in c.sys.list_mounted_secrets_engines()["data"]
    c.sys.enable_secrets_engine(backend_type="aws", path="test")
    assert "test/" in c.sys.list_mounted_secrets_engines()["data"]
    tuning = c.sys.read_mount_configuration(path="test")
    assert tuning["data"]["max_lease_ttl"] == 2764800
    assert tuning["data"]["default_lease_ttl"] == 2764800
    c.sys.tune_mount_configuration(path="test", default_lease_ttl="3600s", max_lease_ttl="8600s")
    tuning = c.sys.read_mount_configuration(path="test")
    assert tuning["data"]["max_lease_ttl"] == 8600
    assert tuning["data"]["default_lease_ttl"] == 3600
    c.sys.move_backend(from_path="test", to_path="foobar")
    mounts = c.sys.list_mounted_secrets_engines()["data"]
    assert "test/" not in mounts
    assert "foobar/" in mounts
    c.sys.disable_secrets_engine(path="foobar")
    assert "foobar/" not in c.sys.list_mounted_secrets_engines()["data"]


@case("mount", "get_secret_backend_tuning")
@with_mount
def _(c):
    assert "default_lease_ttl" in c.sys.read_mount_configuration(path="kvv1_mount")["data"]


# ---- aws (hvac tests/integration_tests/api/secrets_engines/test_aws.py)

AWS_MOUNT = "aws-test"
ROLE = "hvac-test-role"


def with_aws_mount(fn):
    def run(c):
        if "%s/" % AWS_MOUNT not in c.sys.list_auth_methods():
            c.sys.enable_secrets_engine(backend_type="aws", path=AWS_MOUNT)
        try:
            fn(c, c.secrets.aws)
        finally:
            c.sys.disable_secrets_engine(path=AWS_MOUNT)

    return run


@case("aws", "configure_root_iam_credentials")
@with_aws_mount
def _(c, aws):
    assert bool(aws.configure_root_iam_credentials(access_key="butts", secret_key="secret-butts", iam_endpoint="localhost", sts_endpoint="localhost", mount_point=AWS_MOUNT))


@case("aws", "configure_lease")
@with_aws_mount
def _(c, aws):
    assert bool(aws.configure_lease(lease="60s", lease_max="120s", mount_point=AWS_MOUNT))


@case("aws", "read_lease")
@with_aws_mount
def _(c, aws):
    aws.configure_lease(lease="60s", lease_max="120s", mount_point=AWS_MOUNT)
    data = aws.read_lease_config(mount_point=AWS_MOUNT)["data"]
    assert data["lease"] == "1m0s"
    assert data["lease_max"] == "2m0s"


def create_role(**kwargs):
    @with_aws_mount
    def run(c, aws):
        assert bool(aws.create_or_update_role(name=ROLE, mount_point=AWS_MOUNT, **kwargs))

    return run


case("aws", "create_or_update_role_success")(create_role(credential_type="iam_user", policy_document=DESCRIBE))
case("aws", "create_or_update_role_with_policy_arns")(
    create_role(credential_type="iam_user", policy_arns=["arn:aws:iam::aws:policy/AmazonVPCReadOnlyAccess"])
)
case("aws", "create_or_update_role_assumed_role_with_policy_document")(
    create_role(credential_type="assumed_role", policy_document=DESCRIBE)
)


@case("aws", "create_or_update_role_invalid_credential_type")
@with_aws_mount
def _(c, aws):
    raises(ParamValidationError, lambda: aws.create_or_update_role(name=ROLE, credential_type="cat", mount_point=AWS_MOUNT))


@case("aws", "read_role")
@with_aws_mount
def _(c, aws):
    aws.create_or_update_role(name=ROLE, credential_type="iam_user", policy_document=DESCRIBE, mount_point=AWS_MOUNT)
    assert aws.read_role(name=ROLE, mount_point=AWS_MOUNT)["data"]["credential_type"] == "iam_user"


@case("aws", "list_roles")
@with_aws_mount
def _(c, aws):
    aws.create_or_update_role(name=ROLE, credential_type="iam_user", policy_document=DESCRIBE, mount_point=AWS_MOUNT)
    assert aws.list_roles(mount_point=AWS_MOUNT)["data"]["keys"] == [ROLE]


@case("aws", "delete_role")
@with_aws_mount
def _(c, aws):
    aws.create_or_update_role(name=ROLE, credential_type="iam_user", policy_document=DESCRIBE, mount_point=AWS_MOUNT)
    assert bool(aws.delete_role(name=ROLE, mount_point=AWS_MOUNT))


# ---- approle (hvac tests/integration_tests/api/auth_methods/test_approle.py)

APPROLE = "approle-test"
APPROLE_ROLE = "testrole"
APPROLE_ROLE_ID = "test_role_id"


def with_approle(fn):
    def run(c):
        if "%s/" % APPROLE not in c.sys.list_auth_methods():
            c.sys.enable_auth_method(method_type="approle", path=APPROLE)
        c.auth.approle.create_or_update_approle(role_name=APPROLE_ROLE, token_policies=["default"], mount_point=APPROLE)
        c.auth.approle.update_role_id(role_name=APPROLE_ROLE, role_id=APPROLE_ROLE_ID, mount_point=APPROLE)
        try:
            fn(c, c.auth.approle)
        finally:
            # As hvac's tearDown: back to the root token (a login switched to its own), then disable.
            c.token = root_token
            c.sys.disable_auth_method(path=APPROLE)

    return run


def new_secret_id(approle):
    return approle.generate_secret_id(role_name=APPROLE_ROLE, cidr_list=["127.0.0.1/32"], mount_point=APPROLE)["data"]


@case("approle", "create_or_update_approle_create_test_role")
@with_approle
def _(c, approle):
    assert bool(approle.create_or_update_approle(role_name="testrole2", token_policies=["default"], mount_point=APPROLE))


@case("approle", "create_or_update_approle_bad_token_type")
@with_approle
def _(c, approle):
    try:
        approle.create_or_update_approle(role_name="testrole2", token_policies=["default"], token_type="bad_token", mount_point=APPROLE)
    except exceptions.ParamValidationError as e:
        assert "unsupported token_type" in str(e)
        return
    raise AssertionError("expected ParamValidationError")


@case("approle", "list_roles")
@with_approle
def _(c, approle):
    assert len(approle.list_roles(mount_point=APPROLE)["data"]["keys"]) == 1


@case("approle", "read_role")
@with_approle
def _(c, approle):
    assert approle.read_role(role_name=APPROLE_ROLE, mount_point=APPROLE)["data"]["token_type"] == "default"


@case("approle", "delete_role")
@with_approle
def _(c, approle):
    assert approle.delete_role(role_name=APPROLE_ROLE, mount_point=APPROLE).status_code == 204


@case("approle", "read_role_id")
@with_approle
def _(c, approle):
    assert approle.read_role_id(role_name=APPROLE_ROLE, mount_point=APPROLE)["data"]["role_id"] == APPROLE_ROLE_ID


@case("approle", "generate_secret_id_good_request")
@with_approle
def _(c, approle):
    assert "secret_id" in new_secret_id(approle)


@case("approle", "generate_secret_id_bad_metadata_option")
@with_approle
def _(c, approle):
    try:
        approle.generate_secret_id(role_name=APPROLE_ROLE, metadata="metadata string", mount_point=APPROLE)
    except exceptions.ParamValidationError as e:
        assert "unsupported metadata argument" in str(e)
        return
    raise AssertionError("expected ParamValidationError")


@case("approle", "create_custom_secret_id_good_request")
@with_approle
def _(c, approle):
    made = approle.create_custom_secret_id(role_name=APPROLE_ROLE, secret_id="custom_secret", cidr_list=["127.0.0.1/32"], mount_point=APPROLE)
    assert made["data"]["secret_id"] == "custom_secret"


@case("approle", "create_custom_secret_id_bad_metadata_option")
@with_approle
def _(c, approle):
    try:
        approle.create_custom_secret_id(role_name=APPROLE_ROLE, secret_id="custom_secret", cidr_list=["127.0.0.1/32"], metadata="metadata string", mount_point=APPROLE)
    except exceptions.ParamValidationError as e:
        assert "unsupported metadata argument" in str(e)
        return
    raise AssertionError("expected ParamValidationError")


@case("approle", "read_secret_id")
@with_approle
def _(c, approle):
    secret = new_secret_id(approle)
    looked = approle.read_secret_id(role_name=APPROLE_ROLE, secret_id=secret["secret_id"], mount_point=APPROLE)
    assert looked["data"]["secret_id_num_uses"] == 0


@case("approle", "destroy_secret_id")
@with_approle
def _(c, approle):
    secret = new_secret_id(approle)
    assert approle.destroy_secret_id(role_name=APPROLE_ROLE, secret_id=secret["secret_id"], mount_point=APPROLE).status_code == 204


@case("approle", "list_secret_id_accessors")
@with_approle
def _(c, approle):
    new_secret_id(approle)
    assert len(approle.list_secret_id_accessors(role_name=APPROLE_ROLE, mount_point=APPROLE)["data"]["keys"]) == 1


@case("approle", "read_secret_id_accessor")
@with_approle
def _(c, approle):
    secret = new_secret_id(approle)
    looked = approle.read_secret_id_accessor(role_name=APPROLE_ROLE, secret_id_accessor=secret["secret_id_accessor"], mount_point=APPROLE)
    assert looked["data"]["secret_id_accessor"] == secret["secret_id_accessor"]
    assert looked["data"]["cidr_list"][0] == "127.0.0.1/32"


@case("approle", "destroy_secret_id_accessor")
@with_approle
def _(c, approle):
    secret = new_secret_id(approle)
    looked = approle.read_secret_id_accessor(role_name=APPROLE_ROLE, secret_id_accessor=secret["secret_id_accessor"], mount_point=APPROLE)
    assert looked["data"]["secret_id_accessor"] == secret["secret_id_accessor"]
    destroyed = approle.destroy_secret_id_accessor(role_name=APPROLE_ROLE, secret_id_accessor=secret["secret_id_accessor"], mount_point=APPROLE)
    assert destroyed.status_code == 204


@case("approle", "login")
@with_approle
def _(c, approle):
    secret = new_secret_id(approle)
    logged = approle.login(role_id=APPROLE_ROLE_ID, secret_id=secret["secret_id"], mount_point=APPROLE)
    assert "client_token" in logged["auth"]


@case("keel", "approle_login_token_works_uses_run_out_and_disabling_revokes")
@with_approle
def _(c, approle):
    approle.create_or_update_approle(role_name=APPROLE_ROLE, token_policies=["default"], token_ttl="1h", secret_id_num_uses=2, mount_point=APPROLE)
    secret = new_secret_id(approle)
    anonymous = hvac.Client(url=url, verify=ca)
    first = anonymous.auth.approle.login(role_id=APPROLE_ROLE_ID, secret_id=secret["secret_id"], mount_point=APPROLE)
    assert first["auth"]["lease_duration"] == 3600
    assert first["auth"]["metadata"] == {"role_name": APPROLE_ROLE}
    anonymous.token = first["auth"]["client_token"]
    looked = anonymous.auth.token.lookup_self()["data"]
    assert looked["path"] == "auth/%s/login" % APPROLE
    assert looked["policies"] == ["default"]
    anonymous.auth.approle.login(role_id=APPROLE_ROLE_ID, secret_id=secret["secret_id"], mount_point=APPROLE, use_token=False)
    raises(exceptions.InvalidRequest, lambda: anonymous.auth.approle.login(role_id=APPROLE_ROLE_ID, secret_id=secret["secret_id"], mount_point=APPROLE, use_token=False))
    elsewhere = approle.generate_secret_id(role_name=APPROLE_ROLE, cidr_list=["10.0.0.0/8"], mount_point=APPROLE)["data"]
    raises(exceptions.InvalidRequest, lambda: anonymous.auth.approle.login(role_id=APPROLE_ROLE_ID, secret_id=elsewhere["secret_id"], mount_point=APPROLE, use_token=False))
    c.sys.disable_auth_method(path=APPROLE)
    raises(exceptions.Forbidden, lambda: c.auth.token.lookup(first["auth"]["client_token"]))


# ---- jwt (hvac tests/integration_tests/api/auth_methods/test_jwt.py)
# hvac configures the method with Vault's own identity OIDC provider as discovery URL; Keel
# serves keys given as jwt_validation_pubkeys only, so the key pair and the tokens come from the
# test (KEEL_JWT: {"public_key", "tokens": {name: jwt}}), and roles are of type jwt.

JWT_CASE = json.loads(os.environ.get("KEEL_JWT", "{}"))
JWT_MOUNT = "jwt-test"


def with_jwt(fn):
    def run(c):
        c.sys.enable_auth_method(method_type="jwt", path=JWT_MOUNT)
        try:
            fn(c, c.auth.jwt)
        finally:
            c.token = root_token
            c.sys.disable_auth_method(path=JWT_MOUNT)

    return run


def jwt_role(jwt_auth, name="hvac", **kwargs):
    return jwt_auth.create_role(name=name, role_type="jwt", allowed_redirect_uris=None, user_claim="sub", bound_audiences=["keel-tests"], token_policies=["default"], path=JWT_MOUNT, **kwargs)


@case("jwt", "configure")
@with_jwt
def _(c, jwt_auth):
    assert jwt_auth.configure(jwt_validation_pubkeys=[JWT_CASE["public_key"]], bound_issuer="https://issuer.example", path=JWT_MOUNT).status_code == 204


@case("jwt", "read_config")
@with_jwt
def _(c, jwt_auth):
    jwt_auth.configure(jwt_validation_pubkeys=[JWT_CASE["public_key"]], bound_issuer="https://issuer.example", path=JWT_MOUNT)
    assert jwt_auth.read_config(path=JWT_MOUNT)["data"]["bound_issuer"] == "https://issuer.example"


@case("jwt", "create_role")
@with_jwt
def _(c, jwt_auth):
    assert jwt_role(jwt_auth).status_code == 204


@case("jwt", "read_role")
@with_jwt
def _(c, jwt_auth):
    jwt_role(jwt_auth)
    assert jwt_auth.read_role(name="hvac", path=JWT_MOUNT)["data"]["user_claim"] == "sub"


@case("jwt", "list_roles")
@with_jwt
def _(c, jwt_auth):
    jwt_role(jwt_auth)
    assert jwt_auth.list_roles(path=JWT_MOUNT)["data"]["keys"] == ["hvac"]


@case("jwt", "delete_role")
@with_jwt
def _(c, jwt_auth):
    jwt_role(jwt_auth)
    assert jwt_auth.delete_role(name="hvac", path=JWT_MOUNT).status_code == 204


@case("keel", "jwt_login_checks_signature_audience_and_expiry")
@with_jwt
def _(c, jwt_auth):
    jwt_auth.configure(jwt_validation_pubkeys=[JWT_CASE["public_key"]], bound_issuer="https://issuer.example", path=JWT_MOUNT)
    jwt_role(jwt_auth, token_ttl="30m", claim_mappings={"team": "team"}, bound_claims={"team": ["ops", "dev"]})
    anonymous = hvac.Client(url=url, verify=ca)
    tokens = JWT_CASE["tokens"]
    logged = anonymous.auth.jwt.jwt_login(role="hvac", jwt=tokens["good"], path=JWT_MOUNT)
    assert logged["auth"]["lease_duration"] == 1800
    assert logged["auth"]["metadata"] == {"role": "hvac", "team": "ops"}
    assert anonymous.auth.token.lookup_self()["data"]["path"] == "auth/%s/login" % JWT_MOUNT
    for name in ["wrong_audience", "expired", "other_key", "wrong_issuer", "wrong_team"]:
        raises(exceptions.InvalidRequest, lambda: anonymous.auth.jwt.jwt_login(role="hvac", jwt=tokens[name], path=JWT_MOUNT, use_token=False))


# ---- Keel's own cases through the same client: renewal past the first TTL, up to the cap


@case("keel", "token_renewed_past_its_ttl_and_capped_by_explicit_max_ttl")
def _(c):
    created = c.auth.token.create(ttl="1h", explicit_max_ttl="2h", policies=["default"])
    token = created["auth"]["client_token"]
    assert created["auth"]["renewable"] is True
    assert c.auth.token.lookup(token)["data"]["renewable"] is True
    longer = c.auth.token.renew(token, increment="90m")
    assert longer["auth"]["lease_duration"] == 5400
    capped = c.auth.token.renew(token, increment="3h")
    assert 7000 < capped["auth"]["lease_duration"] <= 7200
    assert "capped" in capped["warnings"][0]
    looked = c.auth.token.lookup(token)["data"]
    assert looked["explicit_max_ttl"] == 7200
    assert looked["ttl"] <= 7200


@case("keel", "token_without_ttl_gets_the_default_768h")
def _(c):
    created = c.auth.token.create(policies=["default"])
    assert created["auth"]["lease_duration"] == 2764800


@case("keel", "sys_auth_lists_the_token_method")
def _(c):
    assert "token/" in c.sys.list_auth_methods()["data"]



# ---- hvac's system backend auth cases (api/system_backend/test_auth.py); github is not served,
# so the enable/disable case uses userpass


@case("auth", "auth_backend_manipulation")
def _(c):
    assert "test-userpass/" not in c.sys.list_auth_methods()["data"]
    c.sys.enable_auth_method(method_type="userpass", path="test-userpass")
    assert "test-userpass/" in c.sys.list_auth_methods()["data"]
    c.sys.disable_auth_method(path="test-userpass")
    assert "test-userpass/" not in c.sys.list_auth_methods()["data"]


@case("auth", "tune_auth_backend")
def _(c):
    c.sys.enable_auth_method(method_type="approle", path="test-tune")
    try:
        response = c.sys.tune_auth_method(
            path="test-tune", description="this is a test auth backend", max_lease_ttl=12345678
        )
        assert response.status_code == 204
        tuning = c.sys.read_auth_method_tuning(path="test-tune")["data"]
        assert tuning["max_lease_ttl"] == 12345678
        assert tuning["description"] == "this is a test auth backend"
    finally:
        c.sys.disable_auth_method(path="test-tune")


# ---- hvac's userpass cases (v1/test_integration.py: test_userpass_auth, test_create_userpass)


@case("userpass", "userpass_auth")
def _(c):
    if "userpass/" in c.sys.list_auth_methods()["data"]:
        c.sys.disable_auth_method("userpass")
    c.sys.enable_auth_method("userpass")
    c.write("auth/userpass/users/testuser", password="testpass", policies="not_root")
    result = c.auth.userpass.login("testuser", "testpass")
    assert c.token == result["auth"]["client_token"]
    assert c.is_authenticated()
    c.token = root_token
    c.sys.disable_auth_method("userpass")


@case("userpass", "create_userpass")
def _(c):
    if "userpass/" not in c.sys.list_auth_methods()["data"]:
        c.sys.enable_auth_method("userpass")
    c.auth.userpass.create_or_update_user("testcreateuser", "testcreateuserpass", policies="not_root")
    result = c.auth.userpass.login("testcreateuser", "testcreateuserpass")
    assert c.token == result["auth"]["client_token"]
    assert c.is_authenticated()
    c.token = root_token
    c.auth.userpass.create_or_update_user(
        "testcreateuser", "testcreateuserpass", policies="not_root", ttl="10s"
    )
    c.token = result["auth"]["client_token"]
    result = c.auth.userpass.login("testcreateuser", "testcreateuserpass")
    assert result["auth"]["lease_duration"] == 10
    c.token = root_token
    c.sys.disable_auth_method("userpass")


@case("userpass", "list_read_update_password_and_delete_user")
def _(c):
    c.sys.enable_auth_method("userpass", path="up-crud")
    try:
        c.auth.userpass.create_or_update_user("u1", "p1", policies="default", mount_point="up-crud")
        c.auth.userpass.create_or_update_user("u2", "p2", mount_point="up-crud")
        assert c.auth.userpass.list_user(mount_point="up-crud")["data"]["keys"] == ["u1", "u2"]
        assert c.auth.userpass.read_user("u1", mount_point="up-crud")["data"]["token_policies"] == ["default"]
        c.auth.userpass.update_password_on_user("u1", "p1-new", mount_point="up-crud")
        raises(exceptions.InvalidRequest, lambda: c.auth.userpass.login("u1", "p1", use_token=False, mount_point="up-crud"))
        assert c.auth.userpass.login("u1", "p1-new", use_token=False, mount_point="up-crud")["auth"]["client_token"]
        c.auth.userpass.delete_user("u2", mount_point="up-crud")
        assert c.auth.userpass.list_user(mount_point="up-crud")["data"]["keys"] == ["u1"]
    finally:
        c.sys.disable_auth_method("up-crud")


# ---- health (hvac tests/integration_tests/api/system_backend/test_health.py)
# The cases of a single unsealed node; the standby and sealed ones need an HA cluster of Vault
# nodes that can be sealed, which Keel is not.


@case("health", "read_health_status_default_params")
def _(c):
    assert c.sys.read_health_status(method="HEAD").status_code == 200


@case("health", "read_health_status_get_method")
def _(c):
    assert c.sys.read_health_status(method="GET")["initialized"]


# ---- pki (hvac tests/integration_tests/api/secrets_engines/test_pki.py)
# Each case mounts a certificate authority at pki-integration-test with an exported root and a
# role, as hvac's setUp does, and disables it after. hvac's fixture files (a CA key and
# certificate, a server CSR) are made here by openssl instead.

PKI_MOUNT = "pki-integration-test"
PKI_ROLE = "role-test"


def openssl(*args, stdin=None):
    import subprocess

    return subprocess.run(["openssl", *args], input=stdin, capture_output=True, text=True, check=True).stdout


def pki_fixtures():
    """hvac's ca-key.pem and ca-cert.pem (a self-signed CA), and server-cert.csr."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        key, cert, skey = d + "/ca-key.pem", d + "/ca-cert.pem", d + "/server-key.pem"
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "30",
                "-subj", "/CN=hvac fixture CA", "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        csr = openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", skey, "-subj", "/CN=server.example.com")
        return open(key).read(), open(cert).read(), csr


CA_KEY, CA_CERT, SERVER_CSR = pki_fixtures()


def with_pki_mount(fn):
    def run(c):
        c.sys.enable_secrets_engine(backend_type="pki", path=PKI_MOUNT)
        try:
            c.secrets.pki.generate_root(type="exported", common_name="Vault integration tests", mount_point=PKI_MOUNT)
            c.secrets.pki.create_or_update_role(
                name=PKI_ROLE, extra_params={"allow_any_name": True, "ttl": "6h", "max_ttl": "12h"}, mount_point=PKI_MOUNT
            )
            fn(c, c.secrets.pki)
        finally:
            c.sys.disable_secrets_engine(PKI_MOUNT)

    return run


def with_other_pki_mount(c, suffix, fn):
    path = "%s-%s" % (PKI_MOUNT, suffix)
    c.sys.enable_secrets_engine(backend_type="pki", path=path)
    try:
        return fn(path)
    finally:
        c.sys.disable_secrets_engine(path)


@case("pki", "read_ca_certificate")
@with_pki_mount
def _(c, pki):
    assert isinstance(pki.read_ca_certificate(mount_point=PKI_MOUNT), str)


@case("pki", "read_ca_certificate_chain")
@with_pki_mount
def _(c, pki):
    assert isinstance(pki.read_ca_certificate_chain(mount_point=PKI_MOUNT), str)


@case("pki", "read_certificate")
@with_pki_mount
def _(c, pki):
    serial = pki.list_certificates(mount_point=PKI_MOUNT)["data"]["keys"][0]
    assert isinstance(pki.read_certificate(serial=serial, mount_point=PKI_MOUNT), dict)


@case("pki", "list_certificates")
@with_pki_mount
def _(c, pki):
    assert isinstance(pki.list_certificates(mount_point=PKI_MOUNT), dict)


@case("pki", "submit_ca_information")
@with_pki_mount
def _(c, pki):
    assert bool(pki.submit_ca_information(pem_bundle=CA_KEY + CA_CERT, mount_point=PKI_MOUNT))


@case("pki", "read_crl_configuration")
@with_pki_mount
def _(c, pki):
    pki.set_crl_configuration(expiry="72h", mount_point=PKI_MOUNT)
    assert isinstance(pki.read_crl_configuration(mount_point=PKI_MOUNT), dict)


@case("pki", "set_crl_configuration")
@with_pki_mount
def _(c, pki):
    assert bool(pki.set_crl_configuration(expiry="72h", disable=False, mount_point=PKI_MOUNT))


URLS = {
    "issuing_certificates": ["http://127.0.0.1:8200/v1/pki/ca"],
    "crl_distribution_points": ["http://127.0.0.1:8200/v1/pki/crl"],
}


@case("pki", "read_urls")
@with_pki_mount
def _(c, pki):
    pki.set_urls(params=URLS, mount_point=PKI_MOUNT)
    assert isinstance(pki.read_urls(mount_point=PKI_MOUNT), dict)


@case("pki", "set_urls")
@with_pki_mount
def _(c, pki):
    assert bool(pki.set_urls(params=URLS, mount_point=PKI_MOUNT))


@case("pki", "read_crl")
@with_pki_mount
def _(c, pki):
    pki.set_crl_configuration(expiry="72h", mount_point=PKI_MOUNT)
    assert isinstance(pki.read_crl(mount_point=PKI_MOUNT), str)


@case("pki", "rotate_crl")
@with_pki_mount
def _(c, pki):
    assert isinstance(pki.rotate_crl(mount_point=PKI_MOUNT), dict)


@case("pki", "generate_intermediate")
@with_pki_mount
def _(c, pki):
    assert bool(pki.generate_intermediate(type="exported", common_name="Vault integration tests", mount_point=PKI_MOUNT))


@case("pki", "set_signed_intermediate")
@with_pki_mount
def _(c, pki):
    def run(path):
        name = "Vault integration tests intermediate CA"
        csr = pki.generate_intermediate(type="exported", common_name=name, mount_point=path)["data"]["csr"]
        certificate = pki.sign_intermediate(csr=csr, common_name=name, mount_point=PKI_MOUNT)["data"]["certificate"]
        assert bool(pki.set_signed_intermediate(certificate=certificate, mount_point=path))

    with_other_pki_mount(c, "signed-intermediate-ca", run)


@case("pki", "generate_certificate")
@with_pki_mount
def _(c, pki):
    assert bool(pki.generate_certificate(name=PKI_ROLE, common_name="test.example.com", mount_point=PKI_MOUNT))


@case("pki", "revoke_certificate")
@with_pki_mount
def _(c, pki):
    serial = pki.generate_certificate(name=PKI_ROLE, common_name="test.example.com", mount_point=PKI_MOUNT)["data"]["serial_number"]
    assert bool(pki.revoke_certificate(serial_number=serial, mount_point=PKI_MOUNT))


@case("pki", "create_or_update_role")
@with_pki_mount
def _(c, pki):
    assert bool(pki.create_or_update_role(name=PKI_ROLE + "-2", mount_point=PKI_MOUNT))


@case("pki", "read_role")
@with_pki_mount
def _(c, pki):
    assert isinstance(pki.read_role(name=PKI_ROLE, mount_point=PKI_MOUNT), dict)


@case("pki", "list_roles")
@with_pki_mount
def _(c, pki):
    assert isinstance(pki.list_roles(mount_point=PKI_MOUNT), dict)


@case("pki", "delete_role")
@with_pki_mount
def _(c, pki):
    pki.create_or_update_role(name=PKI_ROLE + "-2", mount_point=PKI_MOUNT)
    assert bool(pki.delete_role(name=PKI_ROLE + "-2", mount_point=PKI_MOUNT))


@case("pki", "generate_root")
@with_pki_mount
def _(c, pki):
    def run(path):
        assert bool(pki.generate_root(type="exported", common_name="Vault integration tests", mount_point=path))

    with_other_pki_mount(c, "test-ca", run)


@case("pki", "delete_root")
@with_pki_mount
def _(c, pki):
    def run(path):
        pki.generate_root(type="exported", common_name="Vault integration tests", mount_point=path)
        assert bool(pki.delete_root(mount_point=path))

    with_other_pki_mount(c, "test-ca", run)


@case("pki", "sign_intermediate")
@with_pki_mount
def _(c, pki):
    def run(path):
        name = "Vault integration tests intermediate CA"
        csr = pki.generate_intermediate(type="exported", common_name=name, mount_point=path)["data"]["csr"]
        assert bool(
            pki.sign_intermediate(csr=csr, common_name=name, extra_params={"use_csr_values": True}, mount_point=PKI_MOUNT)
        )

    with_other_pki_mount(c, "intermediate-ca", run)


@case("pki", "sign_self_issued")
@with_pki_mount
def _(c, pki):
    assert bool(pki.sign_self_issued(certificate=CA_CERT, mount_point=PKI_MOUNT))


@case("pki", "sign_certificate")
@with_pki_mount
def _(c, pki):
    assert bool(pki.sign_certificate(name=PKI_ROLE, csr=SERVER_CSR, common_name="another.example.com", mount_point=PKI_MOUNT))


@case("pki", "sign_verbatim")
@with_pki_mount
def _(c, pki):
    assert bool(pki.sign_verbatim(csr=SERVER_CSR, name=PKI_ROLE, mount_point=PKI_MOUNT))


@case("pki", "tidy")
@with_pki_mount
def _(c, pki):
    assert bool(pki.tidy(mount_point=PKI_MOUNT))


# ---- Keel's own: a token's limited uses through hvac


@case("keel", "token_num_uses_count_down_and_the_last_use_revokes_it")
def _(c):
    token = c.auth.token.create(num_uses=2, policies=["default"])["auth"]["client_token"]
    assert c.auth.token.lookup(token)["data"]["num_uses"] == 2
    limited = hvac.Client(url=url, token=token, verify=ca)
    assert limited.auth.token.lookup_self()["data"]["num_uses"] == 1
    assert limited.auth.token.lookup_self()["data"]["num_uses"] == -1
    raises(exceptions.Forbidden, lambda: limited.auth.token.lookup_self())


@case("keel", "response_wrapping_is_refused_and_nothing_is_made")
def _(c):
    before = c.auth.token.list_accessors()["data"]["keys"]
    try:
        c.auth.token.create(policies=["default"], wrap_ttl="60s")
    except exceptions.InvalidRequest as e:
        assert "response wrapping (X-Vault-Wrap-TTL) is not supported by Keel" in str(e)
    else:
        raise AssertionError("a wrapped token create was answered")
    assert c.auth.token.list_accessors()["data"]["keys"] == before


print(json.dumps(results))
