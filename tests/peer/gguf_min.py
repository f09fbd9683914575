"""A minimal GGUF reader for the peer tests: metadata and tensor infos, and
each tensor's raw bytes (numpy is not needed)."""
import struct

_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f",
           7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
# ggml type id -> (name, block size, block bytes)
GGML_TYPES = {0: ("f32", 1, 4), 1: ("f16", 1, 2), 2: ("q4_0", 32, 18),
              3: ("q4_1", 32, 20), 6: ("q5_0", 32, 22), 7: ("q5_1", 32, 24),
              8: ("q8_0", 32, 34), 10: ("q2_K", 256, 84),
              11: ("q3_K", 256, 110), 12: ("q4_K", 256, 144),
              13: ("q5_K", 256, 176), 14: ("q6_K", 256, 210),
              30: ("bf16", 1, 2)}


class GGUF:
    def __init__(self, path):
        self.data = open(path, "rb").read()
        d = self.data
        if d[:4] != b"GGUF":
            raise ValueError(f"{path}: not a GGUF file")
        self.version, n_tensors, n_kv = struct.unpack_from("<IQQ", d, 4)
        self.pos = 24
        self.kv = {}
        for _ in range(n_kv):
            key = self._string()
            (t,) = struct.unpack_from("<I", d, self.pos)
            self.pos += 4
            self.kv[key] = self._value(t)
        self.tensors = {}
        for _ in range(n_tensors):
            name = self._string()
            (n_dims,) = struct.unpack_from("<I", d, self.pos)
            ne = struct.unpack_from(f"<{n_dims}Q", d, self.pos + 4)
            t, off = struct.unpack_from("<IQ", d, self.pos + 4 + 8 * n_dims)
            self.pos += 4 + 8 * n_dims + 12
            tname, bs, bb = GGML_TYPES[t]
            n = 1
            for x in ne:
                n *= x
            self.tensors[name] = (tname, tuple(ne), off, n // bs * bb)
        align = self.kv.get("general.alignment", 32)
        self.data_start = (self.pos + align - 1) // align * align

    def _string(self):
        (n,) = struct.unpack_from("<Q", self.data, self.pos)
        s = self.data[self.pos + 8:self.pos + 8 + n].decode("utf-8", "replace")
        self.pos += 8 + n
        return s

    def _value(self, t):
        if t == 8:
            return self._string()
        if t == 9:
            et, n = struct.unpack_from("<IQ", self.data, self.pos)
            self.pos += 12
            return [self._value(et) for _ in range(n)]
        fmt = _SCALAR[t]
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v

    def tensor_bytes(self, name):
        _, _, off, size = self.tensors[name]
        start = self.data_start + off
        return self.data[start:start + size]
