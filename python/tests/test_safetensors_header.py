"""fgds.safetensors: the header as untrusted input. Table-driven rejections
(one per rule), acceptance of what the reference writer produces, and a
fuzz loop: mutated headers must either parse into a layout that fits the
file or raise HeaderError, never anything else."""

import json
import os
import random
import struct
import tempfile
import unittest

from fgds import safetensors
from fgds.safetensors import HeaderError


def entry(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def encode(document):
    return json.dumps(document).encode()


class ParseTest(unittest.TestCase):
    def test_valid_header_gives_offsets_in_file_order(self):
        doc = {"b": entry("F32", [2, 2], 16, 32),
               "a": entry("BF16", [4], 8, 16),
               "c": entry("I64", [1], 0, 8), "__metadata__": {"format": "pt"}}
        header = safetensors.parse_header(encode(doc), 32)
        self.assertEqual(list(header.tensors), ["c", "a", "b"])
        self.assertEqual(header.metadata, {"format": "pt"})
        self.assertEqual(header.data_start, 8 + len(encode(doc)))
        self.assertEqual(header.tensors["b"].shape, (2, 2))

    def test_every_dtype_size(self):
        for dtype, bits in safetensors.DTYPE_BITS.items():
            with self.subTest(dtype):
                n = 8  # whole bytes for 4- and 6-bit types too
                doc = {"t": entry(dtype, [n], 0, n * bits // 8)}
                header = safetensors.parse_header(encode(doc), n * bits // 8)
                self.assertEqual(header.tensors["t"].nbytes, n * bits // 8)

    def test_empty_and_scalar_tensors(self):
        doc = {"empty": entry("F32", [0, 3], 0, 0),
               "scalar": entry("F64", [], 0, 8)}
        header = safetensors.parse_header(encode(doc), 8)
        self.assertEqual(header.tensors["scalar"].shape, ())

    def test_spaces_after_the_json_are_allowed(self):
        doc = encode({"t": entry("U8", [3], 0, 3)}) + b"     "
        self.assertEqual(safetensors.parse_header(doc, 3).data_start,
                         8 + len(doc))

    REJECTED = [
        ("not UTF-8", b"{\"\xff\": 1}", 0),
        ("not starting with a brace", b" {}", 0),
        ("not JSON", b"{\"t\": ", 0),
        ("a list", b"[]", 0),
        ("NaN constant", b"{\"t\": NaN}", 0),
        ("duplicate name", b'{"t": {"dtype": "U8", "shape": [1], '
         b'"data_offsets": [0, 1]}, "t": {"dtype": "U8", "shape": [1], '
         b'"data_offsets": [1, 2]}}', 2),
        ("unknown dtype", encode({"t": entry("F128", [1], 0, 16)}), 16),
        ("dtype not a string", encode({"t": entry(7, [1], 0, 1)}), 1),
        ("negative dimension", encode({"t": entry("U8", [-1], 0, 0)}), 0),
        ("float dimension", encode({"t": entry("U8", [1.0], 0, 1)}), 1),
        ("bool dimension", encode({"t": entry("U8", [True], 0, 1)}), 1),
        ("shape not a list", encode({"t": entry("U8", 1, 0, 1)}), 1),
        ("offsets reversed", encode({"t": entry("U8", [0], 1, 0)}), 1),
        ("three offsets", encode({"t": {"dtype": "U8", "shape": [1],
                                        "data_offsets": [0, 1, 2]}}), 1),
        ("missing shape", encode({"t": {"dtype": "U8",
                                        "data_offsets": [0, 1]}}), 1),
        ("extra key", encode({"t": dict(entry("U8", [1], 0, 1), x=1)}), 1),
        ("entry not an object", encode({"t": [1, 2]}), 0),
        ("size disagrees with shape", encode({"t": entry("F32", [2], 0, 4)}),
         4),
        ("sub-byte tensor", encode({"t": entry("F4", [3], 0, 1)}), 1),
        ("gap before the first", encode({"t": entry("U8", [1], 1, 2)}), 2),
        ("gap between", encode({"a": entry("U8", [1], 0, 1),
                                "b": entry("U8", [1], 2, 3)}), 3),
        ("overlap", encode({"a": entry("U16", [2], 0, 4),
                            "b": entry("U16", [1], 2, 4)}), 4),
        ("same range twice", encode({"a": entry("U8", [2], 0, 2),
                                     "b": entry("U8", [2], 0, 2)}), 2),
        ("data left over", encode({"t": entry("U8", [1], 0, 1)}), 2),
        ("data missing", encode({"t": entry("U8", [4], 0, 4)}), 3),
        ("huge shape product", encode({"t": entry("F64", [2**62, 2**62],
                                                  0, 8)}), 8),
        ("metadata not strings", encode({"__metadata__": {"a": 1}}), 0),
        ("metadata a list", encode({"__metadata__": ["a"]}), 0),
    ]

    def test_rejections(self):
        for name, header, data_bytes in self.REJECTED:
            with self.subTest(name):
                with self.assertRaises(HeaderError):
                    safetensors.parse_header(header, data_bytes)

    def test_deep_nesting_is_a_header_error(self):
        with self.assertRaises(HeaderError):
            safetensors.parse_header(b"{\"t\":" + b"[" * 100000 + b"]" *
                                     100000 + b"}", 0)


class ReadHeaderTest(unittest.TestCase):
    def write(self, content):
        fd, path = tempfile.mkstemp()
        self.addCleanup(os.unlink, path)
        os.write(fd, content)
        self.addCleanup(os.close, fd)
        return fd, len(content)

    def test_length_rules(self):
        cases = {
            "shorter than the length field": b"\x01\x00",
            "length past the end": struct.pack("<Q", 100) + b"{}",
            "length over 100 MB": struct.pack("<Q", 100_000_001) + b"{}",
            "length wraps around": struct.pack("<Q", 2**64 - 1) + b"{}",
        }
        for name, content in cases.items():
            with self.subTest(name):
                with self.assertRaises(HeaderError):
                    safetensors.read_header(*self.write(content))

    def test_reads_a_valid_file(self):
        doc = encode({"t": entry("U8", [2], 0, 2)})
        header = safetensors.read_header(
            *self.write(struct.pack("<Q", len(doc)) + doc + b"ab"))
        self.assertEqual(header.tensors["t"].end, 2)


class BuildTest(unittest.TestCase):
    def test_build_then_parse_round_trips(self):
        entries = [("w", "F32", (3, 5)), ("b", "BF16", (5,)),
                   ("flags", "BOOL", (7,)), ("e", "F16", (0,))]
        prefix, infos = safetensors.build_header(entries, {"k": "v"})
        self.assertEqual(len(prefix) % 8, 0)
        (length,) = struct.unpack("<Q", prefix[:8])
        header = safetensors.parse_header(prefix[8:8 + length], infos[-1].end)
        self.assertEqual(header.metadata, {"k": "v"})
        self.assertEqual({n: (i.dtype, i.shape, i.begin, i.end)
                          for n, i in header.tensors.items()},
                         {i.name: (i.dtype, i.shape, i.begin, i.end)
                          for i in infos})

    def test_build_refuses_bad_input(self):
        for entries, metadata in [([("__metadata__", "U8", (1,))], None),
                                  ([("a", "U8", (1,)), ("a", "U8", (1,))],
                                   None),
                                  ([("a", "X9", (1,))], None),
                                  ([("a", "U8", (1,))], {"k": 1})]:
            with self.assertRaises(ValueError):
                safetensors.build_header(entries, metadata)


class FuzzTest(unittest.TestCase):
    """Random mutations of valid headers (bytes flipped, cut, numbers
    changed): the parser must accept only layouts that tile the data, and
    reject the rest with HeaderError."""

    ITERATIONS = int(os.environ.get("FGDS_FUZZ_ITERATIONS", "3000"))

    def seeds(self, rng):
        entries = [(f"t{i}", rng.choice(sorted(safetensors.DTYPE_BITS)),
                    # Multiples of 4 elements: whole bytes for F4 and F6.
                    [rng.randrange(0, 5) * 4
                     for _ in range(rng.randrange(1, 3))])
                   for i in range(rng.randrange(1, 6))]
        prefix, infos = safetensors.build_header(entries)
        return prefix[8:], infos[-1].end

    def mutate(self, rng, header):
        data = bytearray(header)
        for _ in range(rng.randrange(1, 4)):
            kind = rng.randrange(4)
            if kind == 0 and data:
                data[rng.randrange(len(data))] = rng.randrange(256)
            elif kind == 1 and data:
                del data[rng.randrange(len(data)):]
            elif kind == 2:
                text = data.decode("latin-1")
                digits = [i for i, ch in enumerate(text) if ch.isdigit()]
                if digits:
                    i = rng.choice(digits)
                    data[i:i + 1] = str(rng.choice(
                        [0, 1, 9, 2**31, 2**64, -1])).encode()
            else:
                data.insert(rng.randrange(len(data) + 1),
                            rng.choice(b'{}[]",:-0e.'))
        return bytes(data)

    def test_mutated_headers(self):
        rng = random.Random(15)
        accepted = rejected = 0
        for _ in range(self.ITERATIONS):
            header, data_bytes = self.seeds(rng)
            mutated = self.mutate(rng, header)
            data_bytes += rng.choice([0, 0, 1, -1])
            try:
                parsed = safetensors.parse_header(mutated, max(data_bytes, 0))
            except HeaderError:
                rejected += 1
                continue
            accepted += 1
            position = 0
            for info in parsed.tensors.values():
                self.assertEqual(info.begin, position)
                position = info.end
            self.assertEqual(position, max(data_bytes, 0))
        self.assertGreater(rejected, 0)
        self.assertGreater(accepted, 0)


if __name__ == "__main__":
    unittest.main()
