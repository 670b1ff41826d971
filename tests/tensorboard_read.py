#!/usr/bin/env python3
"""Reads back, with TensorBoard's own reader, the event files that
tests/tensorboard_write.lua makes through wick.utils.tensorboard.

usage: tensorboard_read.py WICK_RUNNER SOURCE_DIR
Exit 77 (ctest: skipped) when this python has no `tensorboard` package."""
import glob
import math
import os
import struct
import subprocess
import sys
import tempfile
import zlib

try:
    from tensorboard.backend.event_processing import event_accumulator, event_file_loader
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
    from tensorboard.plugins.hparams import plugin_data_pb2
    from tensorboard.util import tensor_util
except ImportError as e:
    print("skipped: no tensorboard package in %s (%s)" % (sys.executable, e))
    sys.exit(77)

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def close(a, b, tol=1e-6):
    return abs(a - b) <= tol * max(1.0, abs(b))


def check_framing(path):
    """Every record: length, masked CRC-32C of the length, data, masked CRC-32C of the data."""
    data = open(path, "rb").read()
    pos, n = 0, 0
    while pos < len(data):
        (length,) = struct.unpack_from("<Q", data, pos)
        (lcrc,) = struct.unpack_from("<I", data, pos + 8)
        expect(lcrc == masked_crc32c(data[pos:pos + 8]), "%s: record %d length CRC" % (path, n))
        body = data[pos + 12:pos + 12 + length]
        (dcrc,) = struct.unpack_from("<I", data, pos + 12 + length)
        expect(dcrc == masked_crc32c(body), "%s: record %d data CRC" % (path, n))
        pos += 16 + length
        n += 1
    expect(pos == len(data), "%s: ends on a record boundary" % path)
    return n


def decode_png(blob):
    expect(blob[:8] == b"\x89PNG\r\n\x1a\n", "PNG signature")
    pos, idat, ihdr = 8, b"", None
    while pos < len(blob):
        (n,) = struct.unpack_from(">I", blob, pos)
        kind = blob[pos + 4:pos + 8]
        body = blob[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack_from(">I", blob, pos + 8 + n)
        expect(crc == zlib.crc32(kind + body), "PNG chunk %r CRC" % kind)
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, color = ihdr[0], ihdr[1], ihdr[2], ihdr[3]
    ch = {0: 1, 2: 3, 6: 4}[color]
    raw = zlib.decompress(idat)
    rows = []
    for y in range(h):
        line = raw[y * (w * ch + 1):(y + 1) * (w * ch + 1)]
        expect(line[0] == 0, "PNG row filter 0")
        rows.append([tuple(line[1 + x * ch:1 + (x + 1) * ch]) for x in range(w)])
    return w, h, depth, ch, rows


def main():
    runner, src = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as d:
        logdir = os.path.join(d, "logs")
        subprocess.run([runner, os.path.join(src, "tests", "tensorboard_write.lua"), logdir], check=True)
        files = sorted(glob.glob(os.path.join(logdir, "**", "events.out.tfevents.*"), recursive=True))
        expect(len(files) == 4, "4 event files (main, run_test, run_train, hp), got %d" % len(files))
        for f in files:
            expect(check_framing(f) >= 2, "%s: at least 2 records" % f)
            first = next(iter(event_file_loader.EventFileLoader(f).Load()))
            expect(first.file_version == "brain.Event:2", "%s: first record file_version" % f)

        main_file = glob.glob(os.path.join(logdir, "events.out.tfevents.*"))[0]
        acc = event_accumulator.EventAccumulator(main_file, size_guidance={k: 0 for k in (
            event_accumulator.SCALARS, event_accumulator.HISTOGRAMS, event_accumulator.IMAGES,
            event_accumulator.TENSORS)})
        acc.Reload()

        loss = acc.Scalars("loss")
        expect([e.step for e in loss] == [0, 1, 2, 3, 4], "loss steps")
        expect(all(close(e.value, 1 / (e.step + 1)) for e in loss), "loss values")
        expect([e.wall_time for e in loss] == [1000.0, 1001.0, 1002.0, 1003.0, 1004.0], "loss wall times")
        weird = [e.value for e in acc.Scalars("weird")]
        expect(math.isnan(weird[0]) and weird[1] == math.inf and weird[2] == -math.inf, "NaN, inf, -inf scalars")
        big = acc.Scalars("big_step")[0]
        expect(big.step == 2 ** 40 and big.value == 2.5, "a 2^40 step and a tensor scalar")

        for sub, v in (("run_train", 1.5), ("run_test", 2.5)):
            a = event_accumulator.EventAccumulator(os.path.join(logdir, sub))
            a.Reload()
            s = a.Scalars("run")
            expect(len(s) == 1 and s[0].step == 7 and s[0].value == v, "add_scalars %s" % sub)

        h = acc.Histograms("hist")[0]
        hv = h.histogram_value
        expect(h.step == 3 and hv.min == -1 and hv.max == 3 and hv.num == 7, "histogram min/max/num")
        expect(close(hv.sum, 7.5) and close(hv.sum_squares, 19.25), "histogram sum/sum_squares")
        expect(sum(hv.bucket) == 7 and len(hv.bucket) == len(hv.bucket_limit), "histogram buckets")
        expect(hv.bucket_limit == sorted(hv.bucket_limit), "histogram limits ascending")
        h10 = acc.Histograms("hist10")[0].histogram_value
        expect(list(h10.bucket) == [0] + [10] * 10, "10 even buckets of arange(100): %s" % list(h10.bucket))
        expect(close(h10.bucket_limit[-1], 99) and h10.bucket_limit[0] == 0 and close(h10.bucket_limit[1], 9.9), "10 even bucket limits %s" % list(h10.bucket_limit))

        im = acc.Images("img")[0]
        expect(im.step == 5 and im.width == 2 and im.height == 3, "image size")
        w, hgt, depth, ch, rows = decode_png(im.encoded_image_string)
        expect((w, hgt, depth, ch) == (2, 3, 8, 3), "PNG header")
        expect(all(rows[y][x] == (10 * y + x, 100 + y, 200 + x) for y in range(3) for x in range(2)),
               "PNG pixels %s" % rows)
        g = acc.Images("gray")[0]
        _, _, _, gch, grows = decode_png(g.encoded_image_string)
        expect(gch == 1 and grows == [[(0,), (127,)], [(255,), (63,)]], "gray PNG pixels %s" % grows)

        # add_images: 10 images in rows of 8, the 6 missing tiles black
        for tag in ("grid", "grid_nhwc"):
            gi = acc.Images(tag)[0]
            w, hgt, depth, ch, rows = decode_png(gi.encoded_image_string)
            expect((gi.step, w, hgt, ch) == (9, 24, 4, 3), "%s: size %s" % (tag, (gi.step, w, hgt, ch)))
            want = [[tuple((20 * (ty * 8 + tx) + 6 * c + 3 * y + x) if ty * 8 + tx < 10 else 0 for c in range(3))
                     for tx in range(8) for x in range(3)] for ty in range(2) for y in range(2)]
            expect(rows == want, "%s: grid pixels" % tag)

        for tag, step, value, dtype in (("new_style", 10, 0.25, 1), ("new_style_double", 11, 0.1, 2)):
            ts = acc.Tensors(tag)[0]
            expect(ts.step == step and ts.tensor_proto.dtype == dtype, "%s: step and dtype" % tag)
            got = tensor_util.make_ndarray(ts.tensor_proto)
            expect(got.shape == () and close(float(got), value, 1e-7 if dtype == 1 else 0), "%s: value %s" % (tag, got))
            expect(acc.SummaryMetadata(tag).plugin_data.plugin_name == "scalars", "%s: plugin scalars" % tag)

        t = acc.Tensors("note/text_summary")[0]
        expect(t.step == 8 and t.tensor_proto.string_val == [b"hello **wick**"], "text")
        expect(acc.SummaryMetadata("note/text_summary").plugin_data.plugin_name == "text", "text plugin")

        hp = event_accumulator.EventAccumulator(os.path.join(logdir, "hp"))
        hp.Reload()
        content = hp.PluginTagToContent("hparams")
        expect(sorted(content) == ["_hparams_/experiment", "_hparams_/session_end_info",
                                   "_hparams_/session_start_info"], "hparams tags %s" % sorted(content))
        exp = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"]).experiment
        types = {i.name: i.type for i in exp.hparam_infos}
        expect(types == {"lr": 3, "optimizer": 1, "nesterov": 2, "layers": 3}, "hparam types %s" % types)
        expect([m.name.tag for m in exp.metric_infos] == ["hparam/accuracy"], "metric infos")
        domains = {i.name: [getattr(v, v.WhichOneof("kind")) for v in i.domain_discrete.values] for i in exp.hparam_infos}
        expect(domains == {"lr": [0.1, 0.01], "optimizer": ["sgd", "adam"], "nesterov": [True, False], "layers": []},
               "hparam_domain_discrete %s" % domains)
        expect(all(e.step == 12 for e in hp.Scalars("hparam/accuracy")), "add_hparams global_step")
        ssi = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"]).session_start_info
        expect(ssi.hparams["lr"].number_value == 0.1 and ssi.hparams["optimizer"].string_value == "sgd"
               and ssi.hparams["nesterov"].bool_value is True and ssi.hparams["layers"].number_value == 3,
               "session start hparams")
        sei = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_end_info"]).session_end_info
        expect(sei.status == 1, "session end status")
        expect(close(hp.Scalars("hparam/accuracy")[0].value, 0.75), "hparams metric scalar")
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("tensorboard reader: every record read back")


if __name__ == "__main__":
    main()
