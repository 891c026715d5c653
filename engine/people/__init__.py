"""Who: users, groups and tokens (``identity``, ``passwords``, ``throttle``), the actor a
request runs as (``actors``), deputies standing in for absent users (``deputies``), and who may
do and see what (``permissions``: grants and intents; ``visibility``: the read rules). Above the
log (a grant writes an entry), below everything that asks who may. ``role_players`` (whether a
party plays a role, shared by permissions and visibility) is its own detail.
"""

# The modules the other wings (and resolvers/, schema/, server/) may import; the others are
# this wing's own (tests/test_layers.py).
__all__ = [
    "accounts",
    "actors",
    "api_tokens",
    "deputies",
    "identity",
    "inheritance",
    "intents",
    "oidc_identities",
    "passwords",
    "permissions",
    "scopes",
    "throttle",
    "visibility",
]
