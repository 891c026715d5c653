"""What a field costs: its weight, and whether it is a connection (a page of ``first`` nodes)
or a list of declared longest length, which multiply what they contain. Computed once per
schema from the fields' strawberry metadata."""

from graphql import GraphQLSchema, get_named_type, is_composite_type, is_interface_type, is_object_type

COST = "caseway_cost"  # a field's weight, in its strawberry metadata (default: 1 for objects, 0 for scalars)
MAX_ITEMS = "caseway_max_items"  # a list's longest length, in its metadata: it multiplies what the list contains


class Weights:
    """Per schema, computed once: each field's weight and which fields are connections."""

    def __init__(self, schema: GraphQLSchema) -> None:
        self.weights: dict[tuple[str, str], int] = {}
        self.connections: set[tuple[str, str]] = set()
        self.lists: dict[tuple[str, str], int] = {}  # bounded lists: their longest length
        wrappers: set[str] = set()  # connection and edge types: their fields wrap nodes already counted
        for type_ in schema.type_map.values():
            if not (is_object_type(type_) or is_interface_type(type_)) or type_.name.startswith("__"):
                continue
            for name, field in type_.fields.items():  # type: ignore[union-attr]
                returned = get_named_type(field.type)
                definition = (field.extensions or {}).get("strawberry-definition")
                metadata = getattr(definition, "metadata", None) or {}
                self.weights[type_.name, name] = int(metadata.get(COST, 1 if is_composite_type(returned) else 0))
                if MAX_ITEMS in metadata:
                    self.lists[type_.name, name] = int(metadata[MAX_ITEMS])
                if "first" in field.args and is_object_type(returned):
                    self.connections.add((type_.name, name))
                    wrappers.add(returned.name)
                    edges = returned.fields.get("edges")  # type: ignore[union-attr]
                    if edges is not None:
                        wrappers.add(get_named_type(edges.type).name)
        for type_name, name in list(self.weights):
            if type_name in wrappers:
                self.weights[type_name, name] = 0


_weights_by_schema: dict[int, Weights] = {}


def weights(schema: GraphQLSchema) -> Weights:
    found = _weights_by_schema.get(id(schema))
    if found is None:
        found = _weights_by_schema[id(schema)] = Weights(schema)
    return found
