"""TensorFlow's protobuf messages, as flowjit reads and writes them (a leaf package).

`GraphDef`, `NodeDef`, `AttrValue`, `TensorProto`, `TensorShapeProto`, `VersionDef`,
`Event`, `Summary`, `HistogramProto`, `SessionLog`, `RunMetadata`, `StepStats`,
`MetaGraphDef`, `CollectionDef`, `VariableDef`, `SaverDef` and their parts are real protobuf
message classes (the `protobuf` package) with TensorFlow's field names and numbers, declared
in `protos/schema.py` and built into a descriptor pool of flowjit's own
(`protos/declare.py`). `google.protobuf.text_format` reads and writes them; their bytes are
what TensorFlow and TensorBoard read and write.
"""

from __future__ import annotations

from .declare import build_pool
from .schema import DECLARATIONS

_BUILT = build_pool("flowjit/tensorflow_subset.proto", "tensorflow", DECLARATIONS)

DataType = _BUILT["DataType"]          # an EnumDescriptor: DataType.values_by_name[...]
TensorShapeProto = _BUILT["TensorShapeProto"]
TensorProto = _BUILT["TensorProto"]
AttrValue = _BUILT["AttrValue"]
NameAttrList = _BUILT["NameAttrList"]
NodeDef = _BUILT["NodeDef"]
VersionDef = _BUILT["VersionDef"]
GraphDef = _BUILT["GraphDef"]
HistogramProto = _BUILT["HistogramProto"]
SummaryMetadata = _BUILT["SummaryMetadata"]
Summary = _BUILT["Summary"]
SessionLog = _BUILT["SessionLog"]
TaggedRunMetadata = _BUILT["TaggedRunMetadata"]
Event = _BUILT["Event"]
NodeExecStats = _BUILT["NodeExecStats"]
DeviceStepStats = _BUILT["DeviceStepStats"]
StepStats = _BUILT["StepStats"]
RunMetadataProto = _BUILT["RunMetadata"]
VariableDef = _BUILT["VariableDef"]
CollectionDef = _BUILT["CollectionDef"]
SaverDef = _BUILT["SaverDef"]
MetaGraphDef = _BUILT["MetaGraphDef"]

__all__ = ["DataType", "TensorShapeProto", "TensorProto", "AttrValue", "NameAttrList",
           "NodeDef", "VersionDef", "GraphDef", "HistogramProto", "SummaryMetadata",
           "Summary", "SessionLog", "TaggedRunMetadata", "Event", "NodeExecStats",
           "DeviceStepStats", "StepStats", "RunMetadataProto", "VariableDef",
           "CollectionDef", "SaverDef", "MetaGraphDef"]
