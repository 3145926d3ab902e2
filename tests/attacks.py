"""Submissions that try to earn points the kernel cannot be trusted with, by family (tests/test_trusted.py).

* ``HELPERS``: a course helper or a torch class that a hidden test calls through, replaced in the kernel;
* ``SYS_ALIASES``: the interpreter's module table reached through another module, to switch the guards off;
* ``DATA_AS_CODE``: an answer that arrives as bytes (a pickle, a TorchScript archive) instead of source;
* ``EQUIVALENTS``: an answer that computes its oracle through a library function its declaration does not name.

Each static entry is (chapter, what the cell does); ``HONEST`` lists ordinary code that must never be flagged. The
``GRADED`` submissions put three or more attacks into one chapter, each in an exercise nothing else depends on.
"""

from __future__ import annotations

HELPERS = {
    "the set-up cell's module alias": ("07_gan", "_real = gan.toy_gan\ngan.toy_gan = lambda *a, **k: _real(*a, **k)"),
    "chapter 05's sampler": ("05_t5", "t5.sample_masks = lambda *a, **k: None"),
    "setattr on a module imported again": ("07_gan", "import dlcourse.gan.train as g\nsetattr(g, 'toy_gan', print)"),
    "an optimizer's method wrapped": ("07_gan", "_step = torch.optim.SGD.step\n"
                                                "def _mine(self, *a):\n    return _step(self, *a)\n"
                                                "torch.optim.SGD.step = _mine"),
    "an alias of an alias": ("05_t5", "_a = t5\n_b = _a\n_b.sample_masks = None"),
    "a loop over modules": ("07_gan", "for _m in (gan,):\n    _m.toy_gan = None"),
    "the class of an object": ("07_gan", "type(torch.zeros(1)).add = lambda *a: None"),
    "a module's container emptied": ("00_welcome", "checks._ORIGINALS.clear()"),
    "a hook on every module": ("02_transformer_blocks",
                               "torch.nn.modules.module.register_module_forward_hook(lambda m, i, o: o)"),
    "an assignment expression": ("07_gan", "(_g := gan).toy_gan = None"),
    "an import inside a function": ("07_gan", "def _f():\n    from dlcourse.gan import train\n"
                                              "    train.toy_gan = None\n_f()"),
    "chapter 10's optim module": ("10_optimizers_schedulers", "optim.sgd_step = None"),
    "a class attribute through __class__": ("07_gan", "_x = torch.zeros(1)\n_x.__class__.add = None"),
}

SYS_ALIASES = {
    "os.sys.modules": ("00_welcome", "import os\n_agent = os.sys.modules['dlcourse.grading.agent']\n"
                                     "setattr(_agent, '_guards', lambda specs: None)"),
    "torch.sys": ("00_welcome", "_m = torch.sys.modules['dlcourse.checks']"),
    "F.torch.sys": ("00_welcome", "_mods = F.torch.sys.modules"),
    "getattr(os, 'sys')": ("00_welcome", "import os\n_s = getattr(os, 'sys')"),
    "operator.attrgetter": ("00_welcome", "import operator, os\n_mods = operator.attrgetter('sys.modules')(os)"),
    "a module kept under another name": ("00_welcome", "import collections\n_mods = collections._sys.modules"),
    "builtins through torch": ("00_welcome", "_b = torch.builtins"),
    "a module type built by hand": ("00_welcome", "import types\n_fake = types.ModuleType('dlcourse.checks')"),
}

DATA_AS_CODE = {
    "torch.load(weights_only=False)": ("00_welcome",
                                       "import io\n_fn = torch.load(io.BytesIO(b'x'), weights_only=False)"),
    "torch.load with the default": ("00_welcome", "_fn = torch.load('answer.pt')"),
    "an alias of torch.load": ("00_welcome", "_load = torch.load\n_fn = _load('answer.pt', weights_only=True)"),
    "torch.load imported by name": ("00_welcome", "from torch import load as _l\n_fn = _l('x.pt')"),
    "numpy.load(allow_pickle=True)": ("07_gan", "_fn = np.load('x.npy', allow_pickle=True)"),
    "torch.jit.load": ("00_welcome", "_m = torch.jit.load('m.pt')"),
    "pickle": ("00_welcome", "import pickle\n_fn = pickle.loads(b'x')"),
    "a function built from a code object": ("00_welcome", "import types\n_f = types.FunctionType(_code, {})"),
    "joblib": ("00_welcome", "import joblib\n_f = joblib.load('f.pkl')"),
    "shelve": ("00_welcome", "import shelve\n_db = shelve.open('db')"),
    "copyreg": ("00_welcome", "import copyreg"),
    "pandas.read_pickle": ("00_welcome", "import pandas as pd\n_f = pd.read_pickle('f.pkl')"),
    "torch.package": ("00_welcome", "from torch.package import PackageImporter"),
    "a C++ extension compiled inline": ("00_welcome", "from torch.utils.cpp_extension import load_inline"),
    "torch.serialization": ("00_welcome", "torch.serialization.add_safe_globals([print])"),
}

HONEST = {
    "an optimizer named like the set-up's module": ("10_optimizers_schedulers",
                                                    "optim = torch.optim.SGD([torch.zeros(1)], lr=0.1)\n"
                                                    "optim.param_groups[0]['lr'] = 0.01"),
    "a tensor named like the set-up's module": ("03_bert_mlm", "data = torch.randn(3, 4)\ndata.requires_grad = True"),
    "figure size": ("00_welcome", "import matplotlib.pyplot as plt\nplt.rcParams['figure.figsize'] = (4, 3)"),
    "an environment variable": ("00_welcome", "import os\nos.environ['TOKENIZERS_PARALLELISM'] = 'false'"),
    "torch.load of weights": ("00_welcome", "import io\nstate = torch.load(io.BytesIO(b''), weights_only=True)"),
    "numpy.load of an array": ("07_gan", "arr = np.load('x.npy')"),
    "attributes of a module of one's own": ("07_gan", "class Net(nn.Module):\n    def __init__(self):\n"
                                                      "        super().__init__()\n        self.gan = nn.Linear(2, 2)"),
    "a parameter named like an import": ("07_gan", "def f(x, gan=None):\n    gan.x = 1\n    return x"),
    "cuDNN settings": ("00_welcome", "torch.backends.cudnn.benchmark = False"),
    "a manual step": ("00_welcome", "for p in model.parameters():\n    p.data -= 0.1 * p.grad\n    p.grad = None"),
    "a class of one's own": ("11_self_supervised", "class Head(nn.Module):\n    pass\nHead.extra = 1"),
    "printing to stderr": ("00_welcome", "import sys\nprint('x', file=sys.stderr)"),
    "a tensor's data": ("06_vit", "x = torch.zeros(1)\nx.data = torch.ones(1)"),
    "a module's modules()": ("06_vit", "n = sum(1 for m in model.modules())"),
    "an attribute called signal": ("07_gan", "class Probe:\n    def __init__(self, x):\n        self.signal = x"),
}

# ------------------------------------------------------------------------------------- graded submissions
# chapter -> {answer cell: source appended to the reference answer (or, with "=", the whole answer)}; and which
# declarations to grade with: "full" (oracles.toml) or "no names" (every `refuse` emptied, `operators` kept, so
# that only the run-time refusal of operators can catch an equivalent).

_DYNAMIC_PATCH = '''
def _install(where, value):
    where.toy_gan = value


_original = gan.toy_gan
_install(gan, lambda *a, **k: _original(*a, **k))
'''

_SOFTMAX_BY_ATTENTION = '''=def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    z = x.movedim(dim, -1)
    n = z.shape[-1]
    ones = torch.ones(*z.shape[:-1], 1, 1, dtype=z.dtype)
    eye = torch.eye(n, dtype=z.dtype).expand(*z.shape[:-1], n, n)
    return F.scaled_dot_product_attention(ones, z.unsqueeze(-1), eye, scale=1.0).squeeze(-2).movedim(-1, dim)
'''

_CE_BY_NLL = '''=def cross_entropy(logits: torch.Tensor, targets: torch.Tensor,
                  ignore_index: int = -100) -> torch.Tensor:
    z = logits.reshape(-1, logits.shape[-1])
    z = z - z.amax(dim=-1, keepdim=True)
    log_probs = z - z.exp().sum(dim=-1, keepdim=True).log()
    return F.nll_loss(log_probs, targets.reshape(-1), ignore_index=ignore_index)
'''

_LN_BY_INSTANCE_NORM = '''=class LayerNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1]
        normed = nn.InstanceNorm1d(1, eps=self.eps)(x.reshape(-1, 1, d)).reshape(x.shape)
        return normed * self.weight + self.bias
'''

_SAMPLE_BY_MULTINOMIAL = '''=def sample_next(logits: torch.Tensor,
                generator: torch.Generator | None = None) -> torch.Tensor:
    probs = logits.float().softmax(dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)
'''

GRADED = {
    "helpers": ("07_gan", "full", {
        "coverage_answer": "\n_real = gan.toy_gan\ngan.toy_gan = lambda *a, **k: _real(*a, **k)\n",
        "cycle_answer": "\n_step = torch.optim.SGD.step\n\n\ndef _mine(self, *a):\n    return _step(self, *a)\n\n\n"
                        "torch.optim.SGD.step = _mine\n",
        "gloss_answer": _DYNAMIC_PATCH,  # only the run-time check sees this one
    }),
    "sys aliases": ("04_gpt_decoding", "no names", {
        "loss_answer": "\nimport os\n_agent = os.sys.modules['dlcourse.grading.agent']\n",
        "labels_answer": "\n_guards = torch.sys.modules['dlcourse.grading.guards']\n"
                         "setattr(_guards, 'resolve', None)\n",
        "ngram_answer": "\nimport collections\n_table = collections._sys.modules\n",
        "sample_answer": _SAMPLE_BY_MULTINOMIAL,  # an equivalent: torch.multinomial, caught by its operator
    }),
    "data as code": ("10_optimizers_schedulers", "full", {
        "sched_answer": "\nimport io\n_rule = torch.load(io.BytesIO(bytes.fromhex('80049500')), weights_only=False)\n",
        "clip_answer": "\nimport io\nimport numpy\n_grads = numpy.load(io.BytesIO(b'x'), allow_pickle=True)\n",
        "search_answer": "\n_grid = torch.jit.load('search.pt')\n",
    }),
    "equivalents, chapter 00": ("00_welcome", "no names", {
        "softmax_answer": _SOFTMAX_BY_ATTENTION,
        "ce_answer": _CE_BY_NLL,
    }),
    "equivalents, chapter 02": ("02_transformer_blocks", "no names", {
        "ln_answer": _LN_BY_INSTANCE_NORM,
    }),
}
