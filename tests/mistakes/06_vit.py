"""Typical mistakes students make in chapter 06 (patchify, patch embedding, ViT encoder layer, classifier,
position-embedding interpolation): each must fail the exercise's hidden tests, and its visible test unless
PASSES_VISIBLE says why not.

MISTAKES maps an exercise (answer cell ``<exercise>_answer``) to (the mistake, the answer cell as the student
wrote it). They differ from the planted wrong answers of tests/mutants/06_vit.py.
"""

_EMBED_INIT = '''
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
'''

_LAYER_INIT = '''
class ViTEncoderLayer(nn.Module):
    def __init__(self, dim, num_heads, mlp_dim, eps=1e-12):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=eps)
        self.self_attn = MultiHeadAttention(dim, num_heads)
        self.norm2 = nn.LayerNorm(dim, eps=eps)
        self.mlp = nn.Sequential(OrderedDict(fc1=nn.Linear(dim, mlp_dim), act=nn.GELU(), fc2=nn.Linear(mlp_dim, dim)))

    def forward(self, x):
'''

_MODEL_INIT = '''
class VisionTransformer(nn.Module):
    def __init__(self, image_size, patch_size, in_channels, num_classes, dim, depth, num_heads, mlp_dim, eps=1e-12):
        super().__init__()
        self.embeddings = PatchEmbedding(image_size, patch_size, in_channels, dim)
        self.layers = nn.ModuleList(ViTEncoderLayer(dim, num_heads, mlp_dim, eps) for _ in range(depth))
        self.norm = nn.LayerNorm(dim, eps=eps)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, images):
'''


def _body(init: str, body: str) -> str:
    return init + "".join("        " + line + "\n" for line in body.strip("\n").split("\n"))


MISTAKES = {
    "patchify": [
        ("view instead of reshape after the permutation", '''
def patchify(images, patch_size):
    B, C, H, W = images.shape
    P = patch_size
    if H % P or W % P:
        raise ValueError("patch size does not divide the image")
    x = images.view(B, C, H // P, P, W // P, P).permute(0, 2, 4, 1, 3, 5)
    return x.view(B, (H // P) * (W // P), C * P * P)
'''),
        ("refuses the image only when P divides neither side", '''
def patchify(images, patch_size):
    B, C, H, W = images.shape
    P = patch_size
    if H % P and W % P:
        raise ValueError("patch size does not divide the image")
    x = images.reshape(B, C, H // P, P, W // P, P).permute(0, 2, 4, 1, 3, 5)
    return x.reshape(B, (H // P) * (W // P), C * P * P)
'''),
        ("an assert instead of a ValueError", '''
def patchify(images, patch_size):
    B, C, H, W = images.shape
    P = patch_size
    assert H % P == 0 and W % P == 0, "patch size does not divide the image"
    x = images.reshape(B, C, H // P, P, W // P, P).permute(0, 2, 4, 1, 3, 5)
    return x.reshape(B, (H // P) * (W // P), C * P * P)
'''),
        ("assumes square images (the height used for the width)", '''
def patchify(images, patch_size):
    B, C, H, W = images.shape
    P = patch_size
    if H % P or W % P:
        raise ValueError("patch size does not divide the image")
    g = H // P
    x = images.reshape(B, C, g, P, g, P).permute(0, 2, 4, 1, 3, 5)
    return x.reshape(B, g * g, C * P * P)
'''),
        ("the channel axis left in front of the patch grid", '''
def patchify(images, patch_size):
    B, C, H, W = images.shape
    P = patch_size
    if H % P or W % P:
        raise ValueError("patch size does not divide the image")
    x = images.reshape(B, C, H // P, P, W // P, P).permute(0, 1, 2, 4, 3, 5)
    return x.reshape(B, (H // P) * (W // P), C * P * P)
'''),
        ("converts the images to float32", '''
def patchify(images, patch_size):
    B, C, H, W = images.shape
    P = patch_size
    if H % P or W % P:
        raise ValueError("patch size does not divide the image")
    x = images.float().reshape(B, C, H // P, P, W // P, P).permute(0, 2, 4, 1, 3, 5)
    return x.reshape(B, (H // P) * (W // P), C * P * P)
'''),
        ("squeezes a batch of one away", '''
def patchify(images, patch_size):
    B, C, H, W = images.shape
    P = patch_size
    if H % P or W % P:
        raise ValueError("patch size does not divide the image")
    x = images.reshape(B, C, H // P, P, W // P, P).permute(0, 2, 4, 1, 3, 5)
    return x.reshape(B, (H // P) * (W // P), C * P * P).squeeze(0)
'''),
    ],
    "embed": [
        ("the position embeddings never added", _body(_EMBED_INIT, '''
tokens = self.projection(patchify(images, self.patch_size))
cls = self.cls_token.expand(images.shape[0], -1, -1)
return torch.cat([cls, tokens], dim=1)
''')),
        ("the [CLS] token not expanded over the batch", _body(_EMBED_INIT, '''
tokens = self.projection(patchify(images, self.patch_size))
return torch.cat([self.cls_token, tokens], dim=1) + self.position_embeddings
''')),
        ("a fresh zero vector instead of the learned [CLS] token", _body(_EMBED_INIT, '''
tokens = self.projection(patchify(images, self.patch_size))
cls = torch.zeros(images.shape[0], 1, tokens.shape[-1])
return torch.cat([cls, tokens], dim=1) + self.position_embeddings
''')),
        ("position embeddings multiplied instead of added", _body(_EMBED_INIT, '''
tokens = self.projection(patchify(images, self.patch_size))
cls = self.cls_token.expand(images.shape[0], -1, -1)
return torch.cat([cls, tokens], dim=1) * self.position_embeddings
''')),
        ("position embeddings detached, so they never learn", _body(_EMBED_INIT, '''
tokens = self.projection(patchify(images, self.patch_size))
cls = self.cls_token.expand(images.shape[0], -1, -1)
return torch.cat([cls, tokens], dim=1) + self.position_embeddings.detach()
''')),
        ("patch tokens scaled by sqrt(D) as word embeddings are", _body(_EMBED_INIT, '''
tokens = self.projection(patchify(images, self.patch_size)) * math.sqrt(self.cls_token.shape[-1])
cls = self.cls_token.expand(images.shape[0], -1, -1)
return torch.cat([cls, tokens], dim=1) + self.position_embeddings
''')),
        ("the number of patches per side passed as the patch size", _body(_EMBED_INIT, '''
tokens = self.projection(patchify(images, self.grid))
cls = self.cls_token.expand(images.shape[0], -1, -1)
return torch.cat([cls, tokens], dim=1) + self.position_embeddings
''')),
    ],
    "layer": [
        ("no residual around the attention", _body(_LAYER_INIT, '''
h = self.norm1(x)
x = self.self_attn(h, h, h, need_weights=False)[0]
return x + self.mlp(self.norm2(x))
''')),
        ("the residual adds the normalised stream", _body(_LAYER_INIT, '''
h = self.norm1(x)
x = h + self.self_attn(h, h, h, need_weights=False)[0]
return x + self.mlp(self.norm2(x))
''')),
        ("the MLP reads the stream without its LayerNorm", _body(_LAYER_INIT, '''
h = self.norm1(x)
x = x + self.self_attn(h, h, h, need_weights=False)[0]
return x + self.mlp(x)
''')),
        ("attention and MLP in parallel on the same input", _body(_LAYER_INIT, '''
h = self.norm1(x)
return x + self.self_attn(h, h, h, need_weights=False)[0] + self.mlp(self.norm2(x))
''')),
        ("a LayerNorm after the last residual too", _body(_LAYER_INIT, '''
h = self.norm1(x)
x = x + self.self_attn(h, h, h, need_weights=False)[0]
return self.norm2(x + self.mlp(self.norm2(x)))
''')),
        ("the MLP without its activation", _body(_LAYER_INIT, '''
h = self.norm1(x)
x = x + self.self_attn(h, h, h, need_weights=False)[0]
return x + self.mlp.fc2(self.mlp.fc1(self.norm2(x)))
''')),
        ("queries from the un-normalised stream", _body(_LAYER_INIT, '''
h = self.norm1(x)
x = x + self.self_attn(x, h, h, need_weights=False)[0]
return x + self.mlp(self.norm2(x))
''')),
        ("dropout left in the forward pass", _body(_LAYER_INIT, '''
h = self.norm1(x)
x = x + F.dropout(self.self_attn(h, h, h, need_weights=False)[0], p=0.1)
return x + F.dropout(self.mlp(self.norm2(x)), p=0.1)
''')),
    ],
    "model": [
        ("the head on the first patch, not on [CLS]", _body(_MODEL_INIT, '''
z = self.embeddings(images)
for layer in self.layers:
    z = layer(z)
return self.head(self.norm(z)[:, 1])
''')),
        ("max over the tokens instead of [CLS]", _body(_MODEL_INIT, '''
z = self.embeddings(images)
for layer in self.layers:
    z = layer(z)
return self.head(self.norm(z).amax(dim=1))
''')),
        ("the first layer applied depth times", _body(_MODEL_INIT, '''
z = self.embeddings(images)
for _ in self.layers:
    z = self.layers[0](z)
return self.head(self.norm(z)[:, 0])
''')),
        ("layers run in reverse order", _body(_MODEL_INIT, '''
z = self.embeddings(images)
for layer in reversed(self.layers):
    z = layer(z)
return self.head(self.norm(z)[:, 0])
''')),
        ("an extra residual around each layer", _body(_MODEL_INIT, '''
z = self.embeddings(images)
for layer in self.layers:
    z = z + layer(z)
return self.head(self.norm(z)[:, 0])
''')),
        ("returns probabilities instead of logits", _body(_MODEL_INIT, '''
z = self.embeddings(images)
for layer in self.layers:
    z = layer(z)
return self.head(self.norm(z)[:, 0]).softmax(dim=-1)
''')),
        ("the final LayerNorm applied to the embeddings instead", _body(_MODEL_INIT, '''
z = self.norm(self.embeddings(images))
for layer in self.layers:
    z = layer(z)
return self.head(z[:, 0])
''')),
    ],
    "interp": [
        ("new_grid read as (columns, rows)", '''
def interpolate_position_embeddings(position_embeddings, new_grid):
    cls, grid = position_embeddings[:, :1], position_embeddings[:, 1:]
    g, dim = math.isqrt(grid.shape[1]), grid.shape[-1]
    rows, cols = new_grid
    grid = grid.reshape(1, g, g, dim).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=(cols, rows), mode="bicubic", align_corners=False)
    return torch.cat([cls, grid.permute(0, 2, 3, 1).reshape(1, -1, dim)], dim=1)
'''),
        ("antialiased bicubic", '''
def interpolate_position_embeddings(position_embeddings, new_grid):
    cls, grid = position_embeddings[:, :1], position_embeddings[:, 1:]
    g, dim = math.isqrt(grid.shape[1]), grid.shape[-1]
    grid = grid.reshape(1, g, g, dim).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=tuple(new_grid), mode="bicubic", align_corners=False, antialias=True)
    return torch.cat([cls, grid.permute(0, 2, 3, 1).reshape(1, -1, dim)], dim=1)
'''),
        ("nearest-neighbour interpolation", '''
def interpolate_position_embeddings(position_embeddings, new_grid):
    cls, grid = position_embeddings[:, :1], position_embeddings[:, 1:]
    g, dim = math.isqrt(grid.shape[1]), grid.shape[-1]
    grid = grid.reshape(1, g, g, dim).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=tuple(new_grid), mode="nearest")
    return torch.cat([cls, grid.permute(0, 2, 3, 1).reshape(1, -1, dim)], dim=1)
'''),
        ("permuted into an image, but reshaped back without permuting", '''
def interpolate_position_embeddings(position_embeddings, new_grid):
    cls, grid = position_embeddings[:, :1], position_embeddings[:, 1:]
    g, dim = math.isqrt(grid.shape[1]), grid.shape[-1]
    grid = grid.reshape(1, g, g, dim).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=tuple(new_grid), mode="bicubic", align_corners=False)
    return torch.cat([cls, grid.reshape(1, -1, dim)], dim=1)
'''),
        ("the [CLS] embedding left out of the result", '''
def interpolate_position_embeddings(position_embeddings, new_grid):
    grid = position_embeddings[:, 1:]
    g, dim = math.isqrt(grid.shape[1]), grid.shape[-1]
    grid = grid.reshape(1, g, g, dim).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=tuple(new_grid), mode="bicubic", align_corners=False)
    return grid.permute(0, 2, 3, 1).reshape(1, -1, dim)
'''),
        ("the [CLS] embedding put after the grid", '''
def interpolate_position_embeddings(position_embeddings, new_grid):
    cls, grid = position_embeddings[:, :1], position_embeddings[:, 1:]
    g, dim = math.isqrt(grid.shape[1]), grid.shape[-1]
    grid = grid.reshape(1, g, g, dim).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=tuple(new_grid), mode="bicubic", align_corners=False)
    return torch.cat([grid.permute(0, 2, 3, 1).reshape(1, -1, dim), cls], dim=1)
'''),
        ("interpolates in float32 whatever the input's dtype", '''
def interpolate_position_embeddings(position_embeddings, new_grid):
    cls, grid = position_embeddings[:, :1].float(), position_embeddings[:, 1:].float()
    g, dim = math.isqrt(grid.shape[1]), grid.shape[-1]
    grid = grid.reshape(1, g, g, dim).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=tuple(new_grid), mode="bicubic", align_corners=False)
    return torch.cat([cls, grid.permute(0, 2, 3, 1).reshape(1, -1, dim)], dim=1)
'''),
        ("resized under torch.no_grad(), so no gradient flows back", '''
def interpolate_position_embeddings(position_embeddings, new_grid):
    cls, grid = position_embeddings[:, :1], position_embeddings[:, 1:]
    g, dim = math.isqrt(grid.shape[1]), grid.shape[-1]
    with torch.no_grad():
        grid = grid.reshape(1, g, g, dim).permute(0, 3, 1, 2)
        grid = F.interpolate(grid, size=tuple(new_grid), mode="bicubic", align_corners=False)
    return torch.cat([cls, grid.permute(0, 2, 3, 1).reshape(1, -1, dim)], dim=1)
'''),
    ],
}

PASSES_VISIBLE: dict[tuple[str, str], str] = {}
