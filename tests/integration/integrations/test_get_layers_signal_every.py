"""get_layers(signal_every=N) (issue 32: layer-ready signals batched): on_layer runs for layers
N-1, 2N-1, ... and the last, in order, once layers 0..l are in the buffer; wait_layer and the
bytes are unchanged; 0 is refused. Over HTTP and UCX, on a server that delivers layer by
layer."""
import numpy as np
import pytest

from conftest import running_server
from integ_util import oc


@pytest.fixture(scope="module")
def layerwise_server():
    with running_server("oc-py-every-", extra_config='\n[kv]\nlayerwise_threshold = "1"\n') as s:
        s.boto3().create_bucket(Bucket="kv-every")
        yield s


@pytest.mark.parametrize("via", ["http", "ucx"])
@pytest.mark.parametrize("every,layers", [(1, 6), (4, 16), (5, 16), (16, 16), (40, 16)])
def test_signal_every_n_layers(layerwise_server, via, every, layers):
    s = layerwise_server
    c = oc.Client(s.endpoint, s.access_key, s.secret_key)
    n, size = 3, 4096
    d = oc.Descriptor([f"every-{via}-{every}-{layers}/{j}" for j in range(n)], layers=layers,
                      layer_bytes=size)
    arr = np.random.default_rng(every * 100 + layers).integers(0, 256, (n, layers, size),
                                                               dtype=np.uint8)
    c.put_chunks("kv-every", d, arr).raise_for_status()
    want = arr.transpose(1, 0, 2).reshape(layers, -1)
    out = np.zeros(d.payload_bytes, np.uint8)
    view = out.reshape(layers, -1)
    seen, complete = [], []

    def on_layer(layer):
        seen.append(layer)
        complete.append(all(np.array_equal(view[x], want[x]) for x in range(layer + 1)))

    t = c.get_layers("kv-every", d, out, via=via, on_layer=on_layer, signal_every=every)
    t.wait_layer(0)  # wait_layer still answers for every layer
    assert t.wait().matched == n
    expected = [x for x in range(layers) if (x + 1) % every == 0 or x == layers - 1]
    assert seen == expected and all(complete)
    assert np.array_equal(view, want)


def test_signal_every_zero_is_refused(layerwise_server):
    s = layerwise_server
    c = oc.Client(s.endpoint, s.access_key, s.secret_key)
    d = oc.Descriptor(["every-zero/0"], layers=2, layer_bytes=64)
    with pytest.raises(ValueError):
        c.get_layers("kv-every", d, np.zeros(128, np.uint8), via="http",
                     on_layer=lambda layer: None, signal_every=0)
