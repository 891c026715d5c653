"""The dashboard's two routes for signing in with the provider (docs/api.md "Sign in with your
identity provider"): what the page is told, and the exchange's refusals of what a client sent,
each a sentence, with a provider on loopback whose token endpoint answers as the test says
(tests/e2e/test_oidc_provider.py runs it against a real provider)."""

import base64


async def test_without_a_provider_the_page_is_told_there_is_none(app_client):
    answer = await app_client.get("/auth/oidc")
    assert (answer.status_code, answer.content) == (204, b"")
    assert (await app_client.post("/auth/oidc/token", json={})).status_code in (404, 405)


async def test_without_a_client_id_tokens_work_but_the_page_offers_no_sign_in(oidc_app, provider):
    app = await oidc_app()
    assert (await app.http.get("/auth/oidc")).status_code == 204
    refused = await app.http.post("/auth/oidc/token", json={"code": "c", "codeVerifier": "v", "redirectUri": "r"})
    assert refused.status_code == 404
    assert (
        refused.json()["errors"][0]["message"] == "Signing in with an identity provider is not set up on this server."
    )


async def test_the_page_is_told_where_to_send_a_person(oidc_app, provider):
    app = await oidc_app(client_id="caseway-dashboard")
    answer = await app.http.get("/auth/oidc")
    assert answer.status_code == 200 and answer.headers["cache-control"] == "no-store"
    assert answer.json() == {
        "name": "127.0.0.1",
        "issuer": provider.url,
        "authorizationEndpoint": f"{provider.url}/auth",
        "clientId": "caseway-dashboard",
        "scope": "openid profile",
    }


async def test_the_exchange_refuses_what_is_not_a_code_in_a_sentence(oidc_app, provider):
    app = await oidc_app(client_id="caseway-dashboard")
    for body in ({}, {"code": "c", "codeVerifier": "v"}, {"code": "c" * 5000, "codeVerifier": "v", "redirectUri": "r"}):
        answer = await app.http.post("/auth/oidc/token", json=body)
        assert answer.status_code == 400
        assert answer.json()["errors"][0]["message"] == (
            "Send a JSON object with code, codeVerifier and redirectUri (each 1 to 4,000 characters)."
        )
    not_json = await app.http.post("/auth/oidc/token", content=b"code=c")
    assert not_json.status_code == 400


async def test_a_provider_that_cannot_be_reached_is_a_503_for_the_page_too(oidc_app, provider):
    app = await oidc_app(client_id="caseway-dashboard")
    app.app.state.oidc.provider.issuer = "http://127.0.0.1:9"
    answer = await app.http.get("/auth/oidc")
    assert answer.status_code == 503
    assert answer.json()["errors"][0]["extensions"]["code"] == "UNAVAILABLE"
    assert (
        "discovery document cannot be read (http://127.0.0.1:9/.well-known/openid-configuration"
        in (answer.json()["errors"][0]["message"])
    )
    exchange = await app.http.post("/auth/oidc/token", json={"code": "c", "codeVerifier": "v", "redirectUri": "r"})
    assert exchange.status_code == 503


CODE = {"code": "the-code", "codeVerifier": "the-verifier", "redirectUri": "https://caseway.example/"}


async def test_the_exchange_answers_the_token_for_caseways_audience_and_signs_its_holder_in(oidc_app, provider):
    app = await oidc_app(client_id="caseway-dashboard", client_secret="s3cret:/")
    id_token = provider.token("sub-grace", name="Grace Hopper")
    provider.token_answer = (200, {"access_token": "opaque-for-userinfo", "id_token": id_token, "token_type": "Bearer"})
    answer = await app.http.post("/auth/oidc/token", json=CODE)
    assert answer.status_code == 200, answer.text
    assert answer.json()["token"] == id_token and answer.json()["expiresAt"].endswith("Z")
    form, authorization = provider.exchanges[-1]
    assert form == {
        "grant_type": "authorization_code",
        "code": "the-code",
        "redirect_uri": "https://caseway.example/",
        "code_verifier": "the-verifier",
    }
    # The secret as HTTP Basic credentials, each part form-encoded first (RFC 6749, 2.3.1).
    assert authorization == "Basic " + base64.b64encode(b"caseway-dashboard:s3cret%3A%2F").decode()
    viewer = await app.gql("{ viewer { login displayName } }", token=id_token)
    assert viewer == {"viewer": {"login": "grace", "displayName": "Grace Hopper"}}


async def test_a_public_client_sends_its_id_and_prefers_an_access_token_for_caseway(oidc_app, provider):
    app = await oidc_app(client_id="caseway-dashboard")
    access = provider.token("sub-grace", scope="openid")
    provider.token_answer = (200, {"access_token": access, "id_token": provider.token("sub-grace", aud="x")})
    answer = await app.http.post("/auth/oidc/token", json=CODE)
    assert answer.json()["token"] == access
    form, authorization = provider.exchanges[-1]
    assert form["client_id"] == "caseway-dashboard" and authorization == ""


async def test_the_exchange_says_why_it_signs_nobody_in(oidc_app, provider, make_user):
    app = await oidc_app(client_id="caseway-dashboard")
    provider.token_answer = (200, {"access_token": "opaque", "id_token": provider.token(aud="another-app")})
    answer = await app.http.post("/auth/oidc/token", json=CODE)
    assert (answer.status_code, answer.json()["errors"][0]["message"]) == (
        400,
        "Neither the access token nor the ID token the identity provider gave is a JWT for the audience "
        "'caseway-api' (CASEWAY_OIDC_AUDIENCE).",
    )
    await make_user("ada")  # a password user's login: the token's holder is refused, in its sentence
    provider.token_answer = (200, {"id_token": provider.token("sub-ada")})
    answer = await app.http.post("/auth/oidc/token", json=CODE)
    assert answer.status_code == 401
    assert answer.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert answer.json()["errors"][0]["message"].startswith("The login 'ada' belongs to a Caseway user")
    provider.token_answer = (400, {"error": "invalid_grant", "error_description": "code expired"})
    answer = await app.http.post("/auth/oidc/token", json=CODE)
    assert answer.json()["errors"][0]["message"] == "The identity provider refused the sign-in: code expired."
