"""TensorFlow's message definitions that flowjit reads and writes, as declarations.

Field names and numbers are those of TensorFlow's `.proto` files (tensor_shape, types,
tensor, attr_value, node_def, versions, graph, summary, event, step_stats, config's
RunMetadata), so the binary and text forms are TensorFlow's and TensorBoard's.  Only the
fields flowjit uses are declared; fields of newer TensorFlow versions that flowjit does not
know (a GraphDef's function library, a NodeDef's debug info) are kept as unknown fields
when a message is parsed and written back, as protobuf does.
"""

from __future__ import annotations

from .declare import Enum, Field as F, Message as M

_TYPES = ["INVALID", "FLOAT", "DOUBLE", "INT32", "UINT8", "INT16", "INT8", "STRING",
          "COMPLEX64", "INT64", "BOOL", "QINT8", "QUINT8", "QINT32", "BFLOAT16", "QINT16",
          "QUINT16", "UINT16", "COMPLEX128", "HALF", "RESOURCE", "VARIANT", "UINT32",
          "UINT64"]
DATA_TYPE_VALUES = tuple([(f"DT_{n}", i) for i, n in enumerate(_TYPES)]
                         + [(f"DT_{n}_REF", 100 + i) for i, n in enumerate(_TYPES) if i])

TENSORS = [
    Enum("DataType", DATA_TYPE_VALUES),
    M("TensorShapeProto", (F("dim", 2, "TensorShapeProto.Dim", repeated=True),
                           F("unknown_rank", 3, "bool"))),
    M("TensorShapeProto.Dim", (F("size", 1, "int64"), F("name", 2, "string"))),
    M("TensorProto", (
        F("dtype", 1, "DataType"), F("tensor_shape", 2, "TensorShapeProto"),
        F("version_number", 3, "int32"), F("tensor_content", 4, "bytes"),
        F("half_val", 13, "int32", repeated=True), F("float_val", 5, "float", repeated=True),
        F("double_val", 6, "double", repeated=True), F("int_val", 7, "int32", repeated=True),
        F("string_val", 8, "bytes", repeated=True),
        F("scomplex_val", 9, "float", repeated=True),
        F("int64_val", 10, "int64", repeated=True), F("bool_val", 11, "bool", repeated=True),
        F("dcomplex_val", 12, "double", repeated=True),
        F("uint32_val", 16, "uint32", repeated=True),
        F("uint64_val", 17, "uint64", repeated=True))),
]

# TensorFlow's full-type annotations of a node's outputs (full_type.proto), which
# TensorFlow 2 writes on some nodes of v1 graphs too
FULL_TYPE_IDS = (
    ("TFT_UNSET", 0), ("TFT_VAR", 1), ("TFT_ANY", 2), ("TFT_PRODUCT", 3), ("TFT_NAMED", 4),
    ("TFT_FOR_EACH", 20), ("TFT_CALLABLE", 100), ("TFT_TENSOR", 1000), ("TFT_ARRAY", 1001),
    ("TFT_OPTIONAL", 1002), ("TFT_LITERAL", 1003), ("TFT_ENCODED", 1004),
    ("TFT_SHAPE_TENSOR", 1005), ("TFT_BOOL", 200), ("TFT_UINT8", 201), ("TFT_UINT16", 202),
    ("TFT_UINT32", 203), ("TFT_UINT64", 204), ("TFT_INT8", 205), ("TFT_INT16", 206),
    ("TFT_INT32", 207), ("TFT_INT64", 208), ("TFT_HALF", 209), ("TFT_FLOAT", 210),
    ("TFT_DOUBLE", 211), ("TFT_BFLOAT16", 215), ("TFT_COMPLEX64", 212),
    ("TFT_COMPLEX128", 213), ("TFT_STRING", 214), ("TFT_DATASET", 10102),
    ("TFT_RAGGED", 10103), ("TFT_ITERATOR", 10104), ("TFT_MUTEX_LOCK", 10202),
    ("TFT_LEGACY_VARIANT", 10203))

GRAPHS = [
    Enum("FullTypeId", FULL_TYPE_IDS),
    M("FullTypeDef", (F("type_id", 1, "FullTypeId"),
                      F("args", 2, "FullTypeDef", repeated=True),
                      F("s", 3, "string", oneof="attr"), F("i", 4, "int64", oneof="attr"))),
    M("AttrValue", (
        F("list", 1, "AttrValue.ListValue", oneof="value"), F("s", 2, "bytes", oneof="value"),
        F("i", 3, "int64", oneof="value"), F("f", 4, "float", oneof="value"),
        F("b", 5, "bool", oneof="value"), F("type", 6, "DataType", oneof="value"),
        F("shape", 7, "TensorShapeProto", oneof="value"),
        F("tensor", 8, "TensorProto", oneof="value"),
        F("placeholder", 9, "string", oneof="value"),
        F("func", 10, "NameAttrList", oneof="value"))),
    M("AttrValue.ListValue", (
        F("s", 2, "bytes", repeated=True), F("i", 3, "int64", repeated=True),
        F("f", 4, "float", repeated=True), F("b", 5, "bool", repeated=True),
        F("type", 6, "DataType", repeated=True),
        F("shape", 7, "TensorShapeProto", repeated=True),
        F("tensor", 8, "TensorProto", repeated=True),
        F("func", 9, "NameAttrList", repeated=True))),
    M("NameAttrList", (F("name", 1, "string"), F("attr", 2, "map<string,AttrValue>"))),
    M("NodeDef", (F("name", 1, "string"), F("op", 2, "string"),
                  F("input", 3, "string", repeated=True), F("device", 4, "string"),
                  F("attr", 5, "map<string,AttrValue>"),
                  F("experimental_debug_info", 6, "NodeDef.ExperimentalDebugInfo"),
                  F("experimental_type", 7, "FullTypeDef"))),
    M("NodeDef.ExperimentalDebugInfo", (F("original_node_names", 1, "string", repeated=True),
                                        F("original_func_names", 2, "string",
                                          repeated=True))),
    M("VersionDef", (F("producer", 1, "int32"), F("min_consumer", 2, "int32"),
                     F("bad_consumers", 3, "int32", repeated=True))),
    M("GraphDef", (F("node", 1, "NodeDef", repeated=True), F("version", 3, "int32"),
                   F("versions", 4, "VersionDef"))),
]

SUMMARIES = [
    M("HistogramProto", (
        F("min", 1, "double"), F("max", 2, "double"), F("num", 3, "double"),
        F("sum", 4, "double"), F("sum_squares", 5, "double"),
        F("bucket_limit", 6, "double", repeated=True),
        F("bucket", 7, "double", repeated=True))),
    M("SummaryMetadata", (F("plugin_data", 1, "SummaryMetadata.PluginData"),
                          F("display_name", 2, "string"),
                          F("summary_description", 3, "string"),
                          F("data_class", 4, "DataClass"))),
    M("SummaryMetadata.PluginData", (F("plugin_name", 1, "string"),
                                     F("content", 2, "bytes"))),
    Enum("DataClass", (("DATA_CLASS_UNKNOWN", 0), ("DATA_CLASS_SCALAR", 1),
                       ("DATA_CLASS_TENSOR", 2), ("DATA_CLASS_BLOB_SEQUENCE", 3))),
    M("Summary", (F("value", 1, "Summary.Value", repeated=True),)),
    M("Summary.Image", (F("height", 1, "int32"), F("width", 2, "int32"),
                        F("colorspace", 3, "int32"), F("encoded_image_string", 4, "bytes"))),
    M("Summary.Audio", (F("sample_rate", 1, "float"), F("num_channels", 2, "int64"),
                        F("length_frames", 3, "int64"), F("encoded_audio_string", 4, "bytes"),
                        F("content_type", 5, "string"))),
    M("Summary.Value", (
        F("node_name", 7, "string"), F("tag", 1, "string"),
        F("metadata", 9, "SummaryMetadata"),
        F("simple_value", 2, "float", oneof="value"),
        F("obsolete_old_style_histogram", 3, "bytes", oneof="value"),
        F("image", 4, "Summary.Image", oneof="value"),
        F("histo", 5, "HistogramProto", oneof="value"),
        F("audio", 6, "Summary.Audio", oneof="value"),
        F("tensor", 8, "TensorProto", oneof="value"))),
    M("SessionLog", (F("status", 1, "SessionLog.SessionStatus"),
                     F("checkpoint_path", 2, "string"), F("msg", 3, "string"))),
    Enum("SessionLog.SessionStatus", (("STATUS_UNSPECIFIED", 0), ("START", 1), ("STOP", 2),
                                      ("CHECKPOINT", 3))),
    M("TaggedRunMetadata", (F("tag", 1, "string"), F("run_metadata", 2, "bytes"))),
    M("Event", (
        F("wall_time", 1, "double"), F("step", 2, "int64"),
        F("file_version", 3, "string", oneof="what"),
        F("graph_def", 4, "bytes", oneof="what"),
        F("summary", 5, "Summary", oneof="what"),
        F("session_log", 7, "SessionLog", oneof="what"),
        F("tagged_run_metadata", 8, "TaggedRunMetadata", oneof="what"),
        F("meta_graph_def", 9, "bytes", oneof="what"))),
]

STEP_STATS = [
    M("NodeOutput", (F("slot", 1, "int32"),)),
    M("NodeExecStats", (
        F("node_name", 1, "string"), F("all_start_micros", 2, "int64"),
        F("op_start_rel_micros", 3, "int64"), F("op_end_rel_micros", 4, "int64"),
        F("all_end_rel_micros", 5, "int64"), F("output", 7, "NodeOutput", repeated=True),
        F("timeline_label", 8, "string"), F("scheduled_micros", 9, "int64"),
        F("thread_id", 10, "uint32"), F("all_start_nanos", 13, "int64"),
        F("op_start_rel_nanos", 14, "int64"), F("op_end_rel_nanos", 15, "int64"),
        F("all_end_rel_nanos", 16, "int64"), F("scheduled_nanos", 17, "int64"))),
    M("DeviceStepStats", (F("device", 1, "string"),
                          F("node_stats", 2, "NodeExecStats", repeated=True),
                          F("thread_names", 3, "map<uint32,string>"))),
    M("StepStats", (F("dev_stats", 1, "DeviceStepStats", repeated=True),)),
    M("RunMetadata", (F("step_stats", 1, "StepStats"),
                      F("partition_graphs", 3, "GraphDef", repeated=True))),
]

META_GRAPHS = [
    M("VariableDef", (F("variable_name", 1, "string"), F("initial_value_name", 6, "string"),
                      F("initializer_name", 2, "string"), F("snapshot_name", 3, "string"),
                      F("is_resource", 5, "bool"), F("trainable", 7, "bool"))),
    M("CollectionDef", (
        F("node_list", 1, "CollectionDef.NodeList", oneof="kind"),
        F("bytes_list", 2, "CollectionDef.BytesList", oneof="kind"),
        F("int64_list", 3, "CollectionDef.Int64List", oneof="kind"),
        F("float_list", 4, "CollectionDef.FloatList", oneof="kind"))),
    M("CollectionDef.NodeList", (F("value", 1, "string", repeated=True),)),
    M("CollectionDef.BytesList", (F("value", 1, "bytes", repeated=True),)),
    M("CollectionDef.Int64List", (F("value", 1, "int64", repeated=True),)),
    M("CollectionDef.FloatList", (F("value", 1, "float", repeated=True),)),
    M("SaverDef", (F("filename_tensor_name", 1, "string"), F("save_tensor_name", 2, "string"),
                   F("restore_op_name", 3, "string"), F("max_to_keep", 4, "int32"),
                   F("sharded", 5, "bool"), F("keep_checkpoint_every_n_hours", 6, "float"),
                   F("version", 7, "int32"))),
    M("MetaGraphDef", (F("meta_info_def", 1, "MetaGraphDef.MetaInfoDef"),
                       F("graph_def", 2, "GraphDef"), F("saver_def", 3, "SaverDef"),
                       F("collection_def", 4, "map<string,CollectionDef>"))),
    M("MetaGraphDef.MetaInfoDef", (F("meta_graph_version", 1, "string"),
                                   F("tags", 4, "string", repeated=True),
                                   F("tensorflow_version", 5, "string"),
                                   F("tensorflow_git_version", 6, "string"),
                                   F("stripped_default_attrs", 7, "bool"))),
]

DECLARATIONS = TENSORS + GRAPHS + SUMMARIES + STEP_STATS + META_GRAPHS
