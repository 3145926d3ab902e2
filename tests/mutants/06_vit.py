"""Plausible wrong answers for chapter 06. Each must fail that exercise's hidden tests.

MUTANTS maps an exercise (answer cell ``<exercise>_answer``, hidden tests ``<exercise>_hidden``) to
(what is wrong, the wrong answer cell's source).
"""

_PATCHIFY = '''
def patchify(images, patch_size):
    B, C, H, W = images.shape
    P = patch_size
    if {check}:
        raise ValueError("patch size does not divide the image")
    x = images.reshape(B, C, H // P, P, W // P, P)
    x = x.permute({order})
    return x.reshape(B, (H // P) * (W // P), C * P * P)
'''


def patchify(order="0, 2, 4, 1, 3, 5", check="H % P or W % P"):
    return _PATCHIFY.format(order=order, check=check)


_PATCHIFY_UNFOLD = '''
def patchify(images, patch_size):
    if images.shape[-1] % patch_size or images.shape[-2] % patch_size:
        raise ValueError("patch size does not divide the image")
    return F.unfold(images, patch_size, stride=patch_size).transpose(1, 2)
'''

_PATCHIFY_NAIVE = '''
def patchify(images, patch_size):
    B, C, H, W = images.shape
    if H % patch_size or W % patch_size:
        raise ValueError("patch size does not divide the image")
    return images.reshape(B, -1, C * patch_size * patch_size)
'''

_EMBED = '''
class PatchEmbedding(nn.Module):
    def __init__(self, image_size, patch_size, in_channels, dim):
        super().__init__()
        if image_size % patch_size:
            raise ValueError("patch size does not divide the image size")
        self.patch_size = patch_size
        self.grid = image_size // patch_size
        self.num_patches = self.grid**2
        self.projection = nn.Linear(in_channels * patch_size**2, dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.position_embeddings = nn.Parameter(torch.randn(1, self.num_patches + 1, dim))

    def forward(self, images):
        tokens = self.projection(patchify(images, self.patch_size))
        cls = self.cls_token.expand(images.shape[0], -1, -1)
        {body}
'''


def embed(body="return torch.cat([cls, tokens], dim=1) + self.position_embeddings"):
    return _EMBED.format(body=body)


_LAYER = '''
class ViTEncoderLayer(nn.Module):
    def __init__(self, dim, num_heads, mlp_dim, eps=1e-12):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=eps)
        self.self_attn = MultiHeadAttention(dim, num_heads)
        self.norm2 = nn.LayerNorm(dim, eps=eps)
        self.mlp = nn.Sequential(OrderedDict(fc1=nn.Linear(dim, mlp_dim), act=nn.GELU(), fc2=nn.Linear(mlp_dim, dim)))

    def forward(self, x):
        {body}
'''


def layer(body):
    return _LAYER.format(body=body.replace("\n", "\n        "))


_LAYER_TORCH = '''
class ViTEncoderLayer(nn.Module):
    def __init__(self, dim, num_heads, mlp_dim, eps=1e-12):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=eps)
        self.self_attn = nn.MultiheadAttention(dim, num_heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim, eps=eps)
        self.mlp = nn.Sequential(OrderedDict(fc1=nn.Linear(dim, mlp_dim), act=nn.GELU(), fc2=nn.Linear(mlp_dim, dim)))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.self_attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))
'''

_MODEL = '''
class VisionTransformer(nn.Module):
    def __init__(self, image_size, patch_size, in_channels, num_classes, dim, depth, num_heads, mlp_dim, eps=1e-12):
        super().__init__()
        self.embeddings = PatchEmbedding(image_size, patch_size, in_channels, dim)
        self.layers = nn.ModuleList(ViTEncoderLayer(dim, num_heads, mlp_dim, eps) for _ in range(depth))
        self.norm = nn.LayerNorm(dim, eps=eps)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, images):
        z = self.embeddings(images)
        for layer in {layers}:
            z = layer(z)
        return {out}
'''


def model(out="self.head(self.norm(z)[:, 0])", layers="self.layers"):
    return _MODEL.format(out=out, layers=layers)


_INTERP = '''
def interpolate_position_embeddings(position_embeddings, new_grid):
    cls, grid = position_embeddings[:, :1], position_embeddings[:, 1:]
    g, dim = math.isqrt(grid.shape[1]), grid.shape[-1]
    grid = {to_image}
    grid = F.interpolate(grid, size=tuple(new_grid), mode="{mode}", align_corners={corners})
    grid = {to_tokens}
    return torch.cat([cls, grid], dim=1)
'''


def interp(to_image="grid.reshape(1, g, g, dim).permute(0, 3, 1, 2)", mode="bicubic", corners="False",
           to_tokens="grid.permute(0, 2, 3, 1).reshape(1, -1, dim)"):
    return _INTERP.format(to_image=to_image, mode=mode, corners=corners, to_tokens=to_tokens)


_INTERP_WITH_CLS = '''
def interpolate_position_embeddings(position_embeddings, new_grid):
    rows, cols = new_grid
    seq = position_embeddings.transpose(1, 2)  # (1, D, 1 + N): the [CLS] embedding resized with the rest
    seq = F.interpolate(seq, size=1 + rows * cols, mode="linear", align_corners=False)
    return seq.transpose(1, 2)
'''

MUTANTS = {
    "patchify": [
        ("channel-last order inside each patch", patchify(order="0, 2, 4, 3, 5, 1")),
        ("patches numbered column by column", patchify(order="0, 4, 2, 1, 3, 5")),
        ("rows and columns swapped inside each patch", patchify(order="0, 2, 4, 1, 5, 3")),
        ("a plain reshape, no permutation", _PATCHIFY_NAIVE),
        ("calls F.unfold", _PATCHIFY_UNFOLD),
        ("no error when P does not divide the width", patchify(check="H % P")),
    ],
    "embed": [
        ("no position for the [CLS] token", embed(
            "return torch.cat([cls, tokens + self.position_embeddings[:, 1:]], dim=1)")),
        ("[CLS] token last", embed("return torch.cat([tokens, cls], dim=1) + self.position_embeddings")),
        ("position embeddings shifted by one", embed(
            "return torch.cat([cls, tokens], dim=1) + torch.roll(self.position_embeddings, 1, dims=1)")),
        ("the projection as a stride-P convolution", embed(
            "w = self.projection.weight.reshape(len(self.projection.weight), images.shape[1], self.patch_size, "
            "self.patch_size)\n        tokens = F.conv2d(images, w, self.projection.bias, stride=self.patch_size)"
            ".flatten(2).transpose(1, 2)\n"
            "        return torch.cat([cls, tokens], dim=1) + self.position_embeddings")),
        ("projection bias left out", embed(
            "tokens = patchify(images, self.patch_size) @ self.projection.weight.T\n"
            "        return torch.cat([cls, tokens], dim=1) + self.position_embeddings")),
    ],
    "layer": [
        ("post-norm", layer("x = self.norm1(x + self.self_attn(x, x, x, need_weights=False)[0])\n"
                            "return self.norm2(x + self.mlp(x))")),
        ("no residual around the MLP", layer("h = self.norm1(x)\nx = x + self.self_attn(h, h, h, need_weights=False)[0]\n"
                                            "return self.mlp(self.norm2(x))")),
        ("one LayerNorm for both sub-layers", layer(
            "h = self.norm1(x)\nx = x + self.self_attn(h, h, h, need_weights=False)[0]\nreturn x + self.mlp(self.norm1(x))")),
        ("keys and values from the un-normalised stream", layer(
            "h = self.norm1(x)\nx = x + self.self_attn(h, x, x, need_weights=False)[0]\nreturn x + self.mlp(self.norm2(x))")),
        ("tanh approximation of GELU", layer(
            "h = self.norm1(x)\nx = x + self.self_attn(h, h, h, need_weights=False)[0]\n"
            "return x + self.mlp.fc2(F.gelu(self.mlp.fc1(self.norm2(x)), approximate='tanh'))")),
        ("ReLU in the MLP", layer(
            "h = self.norm1(x)\nx = x + self.self_attn(h, h, h, need_weights=False)[0]\n"
            "return x + self.mlp.fc2(F.relu(self.mlp.fc1(self.norm2(x))))")),
        ("nn.MultiheadAttention inside", _LAYER_TORCH),
    ],
    "model": [
        ("mean of the patch tokens instead of [CLS]", model(out="self.head(self.norm(z)[:, 1:].mean(dim=1))")),
        ("no final LayerNorm", model(out="self.head(z[:, 0])")),
        ("head on the last token", model(out="self.head(self.norm(z)[:, -1])")),
        ("last layer skipped", model(layers="self.layers[:-1]")),
    ],
    "interp": [
        ("bilinear", interp(mode="bilinear")),
        ("align_corners=True", interp(corners="True")),
        ("grid read as (D, g, g) without a permutation", interp(
            to_image="grid.reshape(1, dim, g, g)", to_tokens="grid.reshape(1, dim, -1).transpose(1, 2)")),
        ("rows and columns swapped on the way back", interp(to_tokens="grid.permute(0, 3, 2, 1).reshape(1, -1, dim)")),
        ("the sequence resized in 1-D, [CLS] included", _INTERP_WITH_CLS),
    ],
}

# The planted answers each exercise's visible test fails as well: the student sees them before the grade.
VISIBLE = {
    "patchify": [
        "channel-last order inside each patch",
        "patches numbered column by column",
        "rows and columns swapped inside each patch",
        "a plain reshape, no permutation",
        "no error when P does not divide the width",
    ],
    "embed": [
        "no position for the [CLS] token",
        "[CLS] token last",
        "position embeddings shifted by one",
        "projection bias left out",
    ],
    "layer": [
        "post-norm",
        "no residual around the MLP",
        "one LayerNorm for both sub-layers",
        "keys and values from the un-normalised stream",
        "tanh approximation of GELU",
        "ReLU in the MLP",
    ],
    "model": [
        "mean of the patch tokens instead of [CLS]",
        "no final LayerNorm",
        "head on the last token",
        "last layer skipped",
    ],
    "interp": [
        "bilinear",
        "align_corners=True",
        "grid read as (D, g, g) without a permutation",
        "rows and columns swapped on the way back",
        "the sequence resized in 1-D, [CLS] included",
    ],
}
