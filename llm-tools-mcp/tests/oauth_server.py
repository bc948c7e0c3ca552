"""An MCP server that is its own OAuth 2.1 authorization server, on the Python `mcp` SDK's
auth support (metadata, dynamic registration, authorize, token, refresh, revocation, bearer
checks with the RFC 8707 resource), for the client's OAuth tests (`tests/oauth.rs`).

`python oauth_server.py PORT [--wrong-audience] [--record FILE]`: serves
`http://127.0.0.1:PORT/mcp`. The authorization step approves at once (a headless login). With
`--wrong-audience` every token is issued for another resource, which the server then refuses.
With `--record FILE` every secret of a login is appended to FILE as a JSON line
(`{"what": ..., "secret": ...}`): the authorization codes, the PKCE verifiers and refresh tokens
the client sends, and the tokens issued, which then carry an `id_token` as well (a token
response's field beside the access and refresh tokens, as OpenID providers send).

Tools: `whoami` (the token's client), and for the tests `expire_access` (every access token
expires now), `expire_all` (access and refresh tokens), `revoke_all` (every token revoked) and
`refuse_all` (every token, issued before or after, refused from now on: a server that sends
its client through a login on every call); `logins` and `refreshes` count the code and refresh
grants the server made.
"""

import json
import secrets
import sys
import time
import urllib.parse

import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer

PORT = int(sys.argv[1])
WRONG_AUDIENCE = "--wrong-audience" in sys.argv
BASE = f"http://127.0.0.1:{PORT}"
RESOURCE = f"{BASE}/mcp"
RECORD = sys.argv[sys.argv.index("--record") + 1] if "--record" in sys.argv else None


def record(what, secret):
    if RECORD:
        with open(RECORD, "a") as file:
            file.write(json.dumps({"what": what, "secret": secret}) + "\n")


def recording(app):
    """The app, recording the secrets of each token request's form before it reads them."""

    async def wrapped(scope, receive, send):
        if not RECORD or scope["type"] != "http" or scope["path"] != "/token":
            return await app(scope, receive, send)
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        for name, values in urllib.parse.parse_qs(body.decode()).items():
            if name in ("code", "code_verifier", "refresh_token"):
                for value in values:
                    record(name, value)
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await app(scope, replay, send)

    return wrapped


class Provider:
    def __init__(self):
        self.clients = {}
        self.codes = {}
        self.access = {}
        self.refresh = {}
        self.logins = 0
        self.refreshes = 0

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info):
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params):
        code = secrets.token_urlsafe(16)
        record("code", code)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or ["mcp"],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code):
        return self.codes.get(authorization_code)

    def issue(self, client_id, scopes, resource):
        if WRONG_AUDIENCE:
            resource = "https://another-server.example/mcp"
        access = secrets.token_urlsafe(24)
        refresh = secrets.token_urlsafe(24)
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=int(time.time()) + 3600, resource=resource
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, expires_at=int(time.time()) + 86400, resource=resource
        )
        from mcp.shared.auth import OAuthToken

        record("access_token", access)
        record("refresh_token", refresh)
        if not RECORD:
            return OAuthToken(
                access_token=access, token_type="Bearer", expires_in=3600, refresh_token=refresh, scope=" ".join(scopes)
            )

        class WithIdToken(OAuthToken):
            id_token: str

        id_token = secrets.token_urlsafe(24)
        record("id_token", id_token)
        return WithIdToken(
            access_token=access,
            token_type="Bearer",
            expires_in=3600,
            refresh_token=refresh,
            scope=" ".join(scopes),
            id_token=id_token,
        )

    async def exchange_authorization_code(self, client, authorization_code):
        self.codes.pop(authorization_code.code, None)
        self.logins += 1
        return self.issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token):
        token = self.refresh.get(refresh_token)
        if token is None or (token.expires_at is not None and token.expires_at < time.time()):
            return None
        return token

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        if self.refresh.pop(refresh_token.token, None) is None:
            raise TokenError(error="invalid_grant", error_description="refresh token expired or revoked")
        self.refreshes += 1
        return self.issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token):
        if REFUSING:
            return None
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token):
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


PROVIDER = Provider()
REFUSING = False

server = MCPServer(
    "guarded",
    auth_server_provider=PROVIDER,
    auth=AuthSettings(
        issuer_url=BASE,
        resource_server_url=RESOURCE,
        validate_token_resource=True,
        client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=["mcp"], default_scopes=["mcp"]),
        revocation_options=RevocationOptions(enabled=True),
        required_scopes=["mcp"],
    ),
)


@server.tool()
def whoami() -> str:
    """The caller, as its token says."""
    return "authorized"


@server.tool()
def expire_access() -> str:
    """Every access token expires now."""
    for token in PROVIDER.access.values():
        token.expires_at = int(time.time()) - 1
    return "expired"


@server.tool()
def expire_all() -> str:
    """Every access and refresh token expires now."""
    for token in list(PROVIDER.access.values()) + list(PROVIDER.refresh.values()):
        token.expires_at = int(time.time()) - 1
    return "expired"


@server.tool()
def revoke_all() -> str:
    """Every token is revoked."""
    PROVIDER.access.clear()
    PROVIDER.refresh.clear()
    return "revoked"


@server.tool()
def refuse_all() -> str:
    """Every token is refused from now on."""
    global REFUSING
    REFUSING = True
    return "refusing"


@server.tool()
def counts() -> str:
    """How many logins (code grants) and refreshes the server made."""
    return f"logins={PROVIDER.logins} refreshes={PROVIDER.refreshes}"


uvicorn.run(recording(server.streamable_http_app()), host="127.0.0.1", port=PORT, log_level="warning")
