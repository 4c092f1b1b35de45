"""A tiny declaration language for protobuf messages, built into a private descriptor pool.

flowjit reads and writes TensorFlow's file formats (GraphDef, Event, Summary, RunMetadata)
as real protobuf messages without generated `_pb2` modules and without `protoc`: each
message is declared in Python (`protos/schema.py`) as its fields' names, numbers, labels and
types, exactly as TensorFlow's `.proto` files number them, so the bytes on the wire are
TensorFlow's.  `build_pool` turns the declarations into a `FileDescriptorProto` and adds
it to a `DescriptorPool` of flowjit's own: TensorFlow or TensorBoard imported in the same
process keep their messages in the default pool, so the two never clash
(docs/architecture.md, "TensorFlow's file formats").
"""

from __future__ import annotations

import dataclasses

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto

# scalar type names used in declarations -> protobuf field types
SCALARS = {
    "double": _F.TYPE_DOUBLE, "float": _F.TYPE_FLOAT, "int64": _F.TYPE_INT64,
    "uint64": _F.TYPE_UINT64, "int32": _F.TYPE_INT32, "uint32": _F.TYPE_UINT32,
    "bool": _F.TYPE_BOOL, "string": _F.TYPE_STRING, "bytes": _F.TYPE_BYTES,
}


@dataclasses.dataclass(frozen=True)
class Field:
    """One field: `type` is a scalar name, a message or enum name of the same package
    ("TensorShapeProto", "Summary.Image"), or `map<key,value>`."""

    name: str
    number: int
    type: str
    repeated: bool = False
    oneof: str | None = None


@dataclasses.dataclass(frozen=True)
class Message:
    """A message: its (possibly dotted, for nested) name and fields."""

    name: str
    fields: tuple


@dataclasses.dataclass(frozen=True)
class Enum:
    """An enum: its (possibly dotted) name and (name, number) values."""

    name: str
    values: tuple


def _parent(fdp, messages: dict, dotted: str):
    """The DescriptorProto (or the file) that holds the declaration named `dotted`."""
    outer, _, _ = dotted.rpartition(".")
    return messages[outer] if outer else fdp


def _set_type(field_proto, type_name: str, package: str, enums: set):
    if type_name in SCALARS:
        field_proto.type = SCALARS[type_name]
    else:
        field_proto.type = _F.TYPE_ENUM if type_name in enums else _F.TYPE_MESSAGE
        field_proto.type_name = f".{package}.{type_name}"


def _add_field(message_proto, message_name: str, field: Field, package: str, enums: set):
    f = message_proto.field.add(name=field.name, number=field.number)
    f.label = _F.LABEL_REPEATED if field.repeated else _F.LABEL_OPTIONAL
    if field.type.startswith("map<"):
        key, value = field.type[4:-1].split(",")
        entry_name = "".join(p.capitalize() for p in field.name.split("_")) + "Entry"
        entry = message_proto.nested_type.add(name=entry_name)
        entry.options.map_entry = True
        for number, (name, type_name) in enumerate((("key", key), ("value", value)), 1):
            kf = entry.field.add(name=name, number=number, label=_F.LABEL_OPTIONAL)
            _set_type(kf, type_name.strip(), package, enums)
        f.label = _F.LABEL_REPEATED
        f.type = _F.TYPE_MESSAGE
        f.type_name = f".{package}.{message_name}.{entry_name}"
        return
    _set_type(f, field.type, package, enums)
    if field.oneof is not None:
        names = [o.name for o in message_proto.oneof_decl]
        if field.oneof not in names:
            message_proto.oneof_decl.add(name=field.oneof)
            names.append(field.oneof)
        f.oneof_index = names.index(field.oneof)


def build_pool(file_name: str, package: str, declarations) -> dict:
    """Build the declarations into a new pool; returns {dotted name: message class or enum
    descriptor}."""
    fdp = descriptor_pb2.FileDescriptorProto(name=file_name, package=package, syntax="proto3")
    enums = {d.name for d in declarations if isinstance(d, Enum)}
    protos = {}
    for d in declarations:   # parents are declared before their nested types
        holder = _parent(fdp, protos, d.name)
        short = d.name.rpartition(".")[2]
        if isinstance(d, Enum):
            e = holder.enum_type.add(name=short)
            for name, number in d.values:
                e.value.add(name=name, number=number)
        else:
            protos[d.name] = holder.nested_type.add(name=short) if holder is not fdp \
                else fdp.message_type.add(name=short)
    for d in declarations:
        if isinstance(d, Message):
            for field in d.fields:
                _add_field(protos[d.name], d.name, field, package, enums)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    out = {}
    for d in declarations:
        full = f"{package}.{d.name}"
        if isinstance(d, Enum):
            out[d.name] = pool.FindEnumTypeByName(full)
        else:
            out[d.name] = message_factory.GetMessageClass(pool.FindMessageTypeByName(full))
    return out
