"""The identity provider's tokens as bearer tokens (issue 45 point 2): each refusal is one
sentence under UNAUTHENTICATED naming what failed, with keys the test makes and a provider on
loopback (tests/fixtures/oidc.py); a provider whose keys cannot be read is a 503 with a
sentence, never a 500; keys are read through discovery, kept, and read again for an unknown
kid at most once a minute."""

import base64
import hashlib
import hmac
import json
import time

import pytest
from joserfc.jwk import ECKey
from pydantic import ValidationError

from server.settings import Settings
from tests.fixtures.documents import VIEWER
from tests.fixtures.oidc import AUDIENCE, rsa_key


async def test_a_valid_token_signs_in_over_http(oidc_app, provider):
    app = await oidc_app()
    assert await app.gql(VIEWER, token=provider.token("sub-ada")) == {"viewer": {"login": "ada"}}
    assert (provider.discovery_reads, provider.key_reads) == (1, 1)
    # Another token, another request: the keys are kept.
    assert await app.gql(VIEWER, token=provider.token("sub-ada", jti="2")) == {"viewer": {"login": "ada"}}
    assert provider.key_reads == 1


async def test_an_elliptic_curve_key_signs_too(oidc_app, provider):
    provider.keys.append(ECKey.generate_key("P-256", parameters={"kid": "ec-1", "use": "sig"}, private=True))
    app = await oidc_app()
    token = provider.token("sub-ada", key=provider.keys[1], alg="ES256")
    assert await app.gql(VIEWER, token=token) == {"viewer": {"login": "ada"}}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _hs256_with(secret: bytes, token: str) -> str:
    """The classic confusion: the token's claims signed with HMAC, the provider's public key (PEM)
    as the secret, so a server that checked HS256 with that key would accept it (joserfc itself
    refuses to make such a key, so the signature is made here)."""
    header = _b64(json.dumps({"alg": "HS256", "kid": "key-1", "typ": "JWT"}).encode())
    payload = token.split(".")[1]
    signature = hmac.new(secret, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{_b64(signature)}"


def _tamper(token: str) -> str:
    """The token with its payload changed after signing (another subject), the signature kept."""
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["sub"] = "sub-admin"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"{header}.{forged}.{signature}"


def _unsigned(token: str) -> str:
    header = base64.urlsafe_b64encode(b'{"alg":"none","typ":"JWT"}').decode().rstrip("=")
    return f"{header}.{token.split('.')[1]}."


async def test_each_refusal_names_what_failed(oidc_app, provider):
    app = await oidc_app()
    valid = provider.token("sub-ada")
    stranger = rsa_key("key-1")  # the provider's kid, another key
    public_pem = provider.keys[0].as_pem(private=False)
    now = int(time.time())
    cases = {
        "bad signature": (_tamper(valid), "signature does not verify against the identity provider's key 'key-1'"),
        "another key": (provider.token(key=stranger), "signature does not verify"),
        "another key, no kid": (
            provider.token(key=stranger, header={"kid": None}),
            "signature does not verify against any of the identity provider's keys",
        ),
        "none": (_unsigned(valid), "algorithm is none (unsigned)"),
        "HS256 with the public key": (
            _hs256_with(public_pem, valid),
            "algorithm is HS256, a shared secret",
        ),
        "wrong iss": (provider.token(iss="https://elsewhere.example"), "issuer (iss) is 'https://elsewhere.example'"),
        "wrong aud": (provider.token(aud="another-app"), f"audience (aud) is 'another-app', not '{AUDIENCE}'"),
        "expired": (provider.token(exp=now - 90, iat=now - 400), "expired at"),  # past the 60 s of skew
        "not yet valid": (provider.token(nbf=now + 90), "not valid before"),
        "no exp": (provider.token(exp=None), "no expiry time (exp)"),
        "unknown kid": (provider.token(key=rsa_key("key-9")), "signing key (kid 'key-9') is not among"),
    }
    for reason, (token, expected) in cases.items():
        message = await app.refusal(token)
        assert message.startswith("The token is refused: "), (reason, message)
        assert expected in message, (reason, message)
    assert provider.key_reads == 1  # key-9 came within the minute: the keys were not read again


async def test_sixty_seconds_of_skew_are_allowed(oidc_app, provider):
    app = await oidc_app()
    now = int(time.time())
    assert await app.gql(VIEWER, token=provider.token(exp=now - 30, iat=now - 300)) == {"viewer": {"login": "ada"}}
    assert await app.gql(VIEWER, token=provider.token(nbf=now + 30)) == {"viewer": {"login": "ada"}}
    # And no more than 60: a few seconds past it is refused (the margin is for the test's own time).
    assert "expired at" in await app.refusal(provider.token(exp=int(time.time()) - 64, iat=now - 300))
    assert "not valid before" in await app.refusal(provider.token(nbf=int(time.time()) + 64))
    assert await app.gql(VIEWER, token=provider.token(exp=int(time.time()) - 56, iat=now - 300))


async def test_a_token_whose_kid_is_new_reads_the_keys_again_at_most_once_a_minute(oidc_app, provider):
    app = await oidc_app()
    assert await app.gql(VIEWER, token=provider.token()) == {"viewer": {"login": "ada"}}
    provider.keys = [rsa_key("key-2")]  # the provider rotates its key
    rotated = provider.token()
    app.now += 30  # within the minute of the last read: refused, without asking
    assert "kid 'key-2'" in await app.refusal(rotated)
    assert provider.key_reads == 1
    app.now += 31
    assert await app.gql(VIEWER, token=rotated) == {"viewer": {"login": "ada"}}
    assert provider.key_reads == 2
    # A made-up kid right after: refused without another read.
    assert "kid 'key-x'" in await app.refusal(provider.token(key=rsa_key("key-x")))
    assert provider.key_reads == 2


async def test_keys_that_cannot_be_read_are_a_503_with_a_sentence(oidc_app, provider):
    app = await oidc_app()
    provider.jwks_uri = "http://127.0.0.1:9/jwks"  # nothing listens there
    response = await app.post(VIEWER, token=provider.token())
    assert response.status_code == 503
    error = response.json()["errors"][0]
    assert error["extensions"]["code"] == "UNAVAILABLE"
    assert error["message"].startswith("The identity provider's signing keys cannot be read (http://127.0.0.1:9/jwks")
    assert error["message"].endswith("try again shortly.")


async def test_a_provider_that_fails_is_asked_again_after_five_seconds_and_keys_held_are_used(oidc_app, provider):
    app = await oidc_app()
    provider.broken = True
    for reads in (1, 1):  # the second request within five seconds does not ask again
        response = await app.post(VIEWER, token=provider.token())
        assert response.status_code == 503
        assert "(http://127.0.0.1:" in response.json()["errors"][0]["message"]
        assert "/jwks answered 503)" in response.json()["errors"][0]["message"]
        assert provider.key_reads == reads
    provider.broken = False
    app.now += 6
    assert await app.gql(VIEWER, token=provider.token()) == {"viewer": {"login": "ada"}}
    assert provider.key_reads == 2
    # Ten minutes on, the keys are read again; the provider fails, the keys held still work.
    provider.broken = True
    app.now += 601
    assert await app.gql(VIEWER, token=provider.token(jti="later")) == {"viewer": {"login": "ada"}}
    assert provider.key_reads == 3


async def test_a_provider_that_cannot_be_reached_at_all_is_a_503(oidc_app, provider):
    app = await oidc_app()
    token = provider.token()
    provider.url = "http://127.0.0.1:9"
    app.app.state.oidc.provider.issuer = provider.url  # as if the issuer were down
    response = await app.post(VIEWER, token=token)
    assert response.status_code == 503
    assert "discovery document cannot be read" in response.json()["errors"][0]["message"]


async def test_caseway_tokens_still_work_beside_the_providers(oidc_app, make_user):
    app = await oidc_app()
    _, token = await make_user("carol")
    assert await app.gql(VIEWER, token=token) == {"viewer": {"login": "carol"}}


async def test_without_an_issuer_a_jwt_is_a_malformed_token(gql, provider):
    body = await gql.raw(VIEWER, token=provider.token())
    assert "malformed" in body["errors"][0]["message"]


def test_an_issuer_without_an_audience_refuses_to_start(monkeypatch):
    from server import cli
    from server.cli_errors import CliError

    with pytest.raises(ValidationError, match="CASEWAY_OIDC_ISSUER needs CASEWAY_OIDC_AUDIENCE"):
        Settings(oidc_issuer="https://id.example/realms/acme")
    with pytest.raises(ValidationError, match="CASEWAY_OIDC_CLIENT_ID needs CASEWAY_OIDC_ISSUER"):
        Settings(oidc_client_id="caseway")
    monkeypatch.setenv("CASEWAY_OIDC_ISSUER", "https://id.example/realms/acme")
    with pytest.raises(CliError) as refusal:
        cli._settings()
    assert "CASEWAY_OIDC_ISSUER needs CASEWAY_OIDC_AUDIENCE" in str(refusal.value)


async def test_hostile_token_shapes_are_refused_not_crashed_on(oidc_app, provider):
    """Found by review: a header nested past the JSON parser's depth, and time claims that are not
    times (NaN, far before 1970), each answered 500."""
    app = await oidc_app()
    nested = _b64(b'{"a":' + b"[" * 5000) + "." + _b64(b'{"sub":"x"}') + ".AAAA"
    assert "The token is refused" in await app.refusal(nested)
    for exp in (float("nan"), -(10**14)):
        message = await app.refusal(provider.token(exp=exp))
        assert "no expiry time (exp)" in message, (exp, message)
    # A download with a refused provider token is 401, as one with no token.
    response = await app.http.get("/documents/doc_x", headers={"Authorization": f"Bearer {_tamper(provider.token())}"})
    assert response.status_code == 401, response.text
