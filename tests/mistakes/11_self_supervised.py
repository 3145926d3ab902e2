"""Typical mistakes students make in chapter 11 (self-supervised learning: rotation and jigsaw pretext tasks,
SimCLR's views, NT-Xent, the triplet loss, k-NN evaluation): each must fail the exercise's hidden tests, and its
visible test unless PASSES_VISIBLE says why not.

MISTAKES maps an exercise (answer cell ``<exercise>_answer``) to (the mistake, the answer cell as the student
wrote it). They differ from the planted wrong answers of tests/mutants/11_self_supervised.py. The pretext cell
has two functions; a mistake in one of them redefines only that one.
"""

_VIEWS = '''
def simclr_views(images, generator, *, scale=(0.2, 1.0), flip=0.5, jitter=0.4):
    b, _, h, w = images.shape

    def uniform(low, high):
        return low + (high - low) * torch.rand(b, generator=generator, dtype=torch.float64)

    def one_view():
        area = uniform(*scale)
        ratio = torch.exp(uniform(math.log(3 / 4), math.log(4 / 3)))
        box_w = {box_w}
        box_h = {box_h}
        top = {top}
        left = {left}
        view = selfsup.resized_crop(images, top, left, box_h, box_w)
        {flip}
        factor = {factor}
        return {out}

    return one_view(), one_view()
'''


def _views(box_w="torch.round(w * torch.sqrt(area * ratio)).clamp(1, w).long()",
           box_h="torch.round(h * torch.sqrt(area / ratio)).clamp(1, h).long()",
           top="torch.floor(uniform(0.0, 1.0) * (h - box_h + 1)).long()",
           left="torch.floor(uniform(0.0, 1.0) * (w - box_w + 1)).long()",
           flip="flipped = uniform(0.0, 1.0) < flip\n"
                "        view = torch.where(flipped[:, None, None, None], view.flip(-1), view)",
           factor="uniform(1 - jitter, 1 + jitter).to(images.dtype)",
           out="(view * factor[:, None, None, None]).clamp(0.0, 1.0)"):
    return _VIEWS.format(box_w=box_w, box_h=box_h, top=top, left=left, flip=flip, factor=factor, out=out)


MISTAKES = {
    "pretext": [
        ("quarter turn as flip then transpose (that turns clockwise)", '''
def rotation_batch(images):
    turns = [images]
    for _ in range(3):
        turns.append(turns[-1].flip(-2).transpose(-2, -1))
    labels = torch.arange(4, device=images.device).repeat_interleave(len(images))
    return torch.cat(turns), labels
'''),
        ("every turn made from the original image instead of the previous turn", '''
def rotation_batch(images):
    turns = [images]
    for _ in range(3):
        turns.append(images.transpose(-2, -1).flip(-2))
    labels = torch.arange(4, device=images.device).repeat_interleave(len(images))
    return torch.cat(turns), labels
'''),
        ("labels in degrees (0, 90, 180, 270) instead of k", '''
def rotation_batch(images):
    turns = [images]
    for _ in range(3):
        turns.append(turns[-1].transpose(-2, -1).flip(-2))
    labels = 90 * torch.arange(4, device=images.device).repeat_interleave(len(images))
    return torch.cat(turns), labels
'''),
        ("turns stacked image by image (stack on dim 1) while the labels go block by block", '''
def rotation_batch(images):
    turns = [images]
    for _ in range(3):
        turns.append(turns[-1].transpose(-2, -1).flip(-2))
    labels = torch.arange(4, device=images.device).repeat_interleave(len(images))
    return torch.stack(turns, dim=1).flatten(0, 1), labels
'''),
        ("tiles cut by a plain reshape, without moving the grid's axes", '''
def jigsaw_batch(images, permutations, choice):
    b, c, h, w = images.shape
    tiles = images.reshape(b, c, 4, h // 2, w // 2).transpose(1, 2)
    order = permutations[choice]
    return tiles[torch.arange(b)[:, None], order], choice.clone()
'''),
        ("the labels returned as choice itself, not a copy", '''
def jigsaw_batch(images, permutations, choice):
    b, c, h, w = images.shape
    tiles = images.reshape(b, c, 2, h // 2, 2, w // 2).permute(0, 2, 4, 1, 3, 5).reshape(b, 4, c, h // 2, w // 2)
    order = permutations[choice]
    return tiles[torch.arange(b)[:, None], order], choice
'''),
        ("height and width mixed up when cutting the tiles", '''
def jigsaw_batch(images, permutations, choice):
    b, c, h, w = images.shape
    tiles = images.reshape(b, c, 2, w // 2, 2, h // 2).permute(0, 2, 4, 1, 3, 5).reshape(b, 4, c, w // 2, h // 2)
    order = permutations[choice]
    return tiles[torch.arange(b)[:, None], order], choice.clone()
'''),
        ("the first image's permutation applied to the whole batch", '''
def jigsaw_batch(images, permutations, choice):
    b, c, h, w = images.shape
    tiles = images.reshape(b, c, 2, h // 2, 2, w // 2).permute(0, 2, 4, 1, 3, 5).reshape(b, 4, c, h // 2, w // 2)
    order = permutations[choice[0]]
    return tiles[:, order], choice.clone()
'''),
        ("tiles[:, order] without the batch index: every image gets every image's order", '''
def jigsaw_batch(images, permutations, choice):
    b, c, h, w = images.shape
    tiles = images.reshape(b, c, 2, h // 2, 2, w // 2).permute(0, 2, 4, 1, 3, 5).reshape(b, 4, c, h // 2, w // 2)
    order = permutations[choice]
    return tiles[:, order], choice.clone()
'''),
    ],
    "views": [
        ("box sides truncated (.long()) instead of rounded",
         _views(box_w="(w * torch.sqrt(area * ratio)).clamp(1, w).long()",
                box_h="(h * torch.sqrt(area / ratio)).clamp(1, h).long()")),
        ("the square root forgotten: box side W·s·r",
         _views(box_w="torch.round(w * area * ratio).clamp(1, w).long()",
                box_h="torch.round(h * area / ratio).clamp(1, h).long()")),
        ("positions one short: floor(u·(H − h)), the box never touches the bottom or right edge",
         _views(top="torch.floor(uniform(0.0, 1.0) * (h - box_h)).long()",
                left="torch.floor(uniform(0.0, 1.0) * (w - box_w)).long()")),
        ("the top row one short: floor(u·(H − h)), the box never touches the bottom edge",
         _views(top="torch.floor(uniform(0.0, 1.0) * (h - box_h)).long()")),
        ("aspect ratio uniform on [3/4, 4/3] instead of log-uniform", _views().replace(
            "ratio = torch.exp(uniform(math.log(3 / 4), math.log(4 / 3)))", "ratio = uniform(3 / 4, 4 / 3)")),
        ("one crop drawn for both views", '''
def simclr_views(images, generator, *, scale=(0.2, 1.0), flip=0.5, jitter=0.4):
    b, _, h, w = images.shape

    def uniform(low, high):
        return low + (high - low) * torch.rand(b, generator=generator, dtype=torch.float64)

    area = uniform(*scale)
    ratio = torch.exp(uniform(math.log(3 / 4), math.log(4 / 3)))
    box_w = torch.round(w * torch.sqrt(area * ratio)).clamp(1, w).long()
    box_h = torch.round(h * torch.sqrt(area / ratio)).clamp(1, h).long()
    top = torch.floor(uniform(0.0, 1.0) * (h - box_h + 1)).long()
    left = torch.floor(uniform(0.0, 1.0) * (w - box_w + 1)).long()
    crop = selfsup.resized_crop(images, top, left, box_h, box_w)

    def one_view():
        flipped = uniform(0.0, 1.0) < flip
        view = torch.where(flipped[:, None, None, None], crop.flip(-1), crop)
        factor = uniform(1 - jitter, 1 + jitter).to(images.dtype)
        return (view * factor[:, None, None, None]).clamp(0.0, 1.0)

    return one_view(), one_view()
'''),
        ("flips tossed with the global random state", _views(
            flip="flipped = torch.rand(b) < flip\n"
                 "        view = torch.where(flipped[:, None, None, None], view.flip(-1), view)")),
        ("brightness only brightens: factor from U(1, 1 + j)",
         _views(factor="uniform(1, 1 + jitter).to(images.dtype)")),
        ("brightness factor from U(−j, j), the 1 + forgotten",
         _views(factor="uniform(-jitter, jitter).to(images.dtype)")),
        ("no clamp to [0, 1] after the brightness", _views(out="view * factor[:, None, None, None]")),
        ("flips with probability 1 − flip", _views(
            flip="flipped = uniform(0.0, 1.0) > flip\n"
                 "        view = torch.where(flipped[:, None, None, None], view.flip(-1), view)")),
        ("one flip decision for the whole batch", _views(
            flip="if uniform(0.0, 1.0)[0] < flip:\n"
                 "            view = view.flip(-1)")),
    ],
    "ntxent": [
        ("normalised along the batch (dim 0) instead of each vector", '''
def nt_xent(z1, z2, temperature=0.5):
    n = len(z1)
    z = F.normalize(torch.cat([z1, z2]), dim=0)
    logits = z @ z.T / temperature
    itself = torch.eye(2 * n, dtype=torch.bool)
    logits = logits.masked_fill(itself, float("-inf"))
    partner = torch.cat([torch.arange(n, 2 * n), torch.arange(n)])
    return F.cross_entropy(logits, partner)
'''),
        ("self-similarities masked with 0 instead of −∞", '''
def nt_xent(z1, z2, temperature=0.5):
    n = len(z1)
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    logits = z @ z.T / temperature
    logits = logits.masked_fill(torch.eye(2 * n, dtype=torch.bool), 0.0)
    partner = torch.cat([torch.arange(n, 2 * n), torch.arange(n)])
    return F.cross_entropy(logits, partner)
'''),
        ("summed over the 2N views instead of averaged", '''
def nt_xent(z1, z2, temperature=0.5):
    n = len(z1)
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    logits = (z @ z.T / temperature).masked_fill(torch.eye(2 * n, dtype=torch.bool), float("-inf"))
    partner = torch.cat([torch.arange(n, 2 * n), torch.arange(n)])
    return F.cross_entropy(logits, partner, reduction="sum")
'''),
        ("targets are the image numbers (0..N−1 twice), as pytorch-metric-learning's labels", '''
def nt_xent(z1, z2, temperature=0.5):
    n = len(z1)
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    logits = (z @ z.T / temperature).masked_fill(torch.eye(2 * n, dtype=torch.bool), float("-inf"))
    return F.cross_entropy(logits, torch.arange(n).repeat(2))
'''),
        ("the two halves' mean losses added, not averaged", '''
def nt_xent(z1, z2, temperature=0.5):
    n = len(z1)
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    logits = (z @ z.T / temperature).masked_fill(torch.eye(2 * n, dtype=torch.bool), float("-inf"))
    return (F.cross_entropy(logits[:n], torch.arange(n, 2 * n)) + F.cross_entropy(logits[n:], torch.arange(n)))
'''),
        ("only one side of the similarity normalised", '''
def nt_xent(z1, z2, temperature=0.5):
    n = len(z1)
    z = torch.cat([z1, z2])
    logits = F.normalize(z, dim=1) @ z.T / temperature
    logits = logits.masked_fill(torch.eye(2 * n, dtype=torch.bool), float("-inf"))
    partner = torch.cat([torch.arange(n, 2 * n), torch.arange(n)])
    return F.cross_entropy(logits, partner)
'''),
        ("CLIP's loss: negatives only from the other view's batch", '''
def nt_xent(z1, z2, temperature=0.5):
    a, b = F.normalize(z1, dim=1), F.normalize(z2, dim=1)
    logits = a @ b.T / temperature
    target = torch.arange(len(a))
    return (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2
'''),
        ("divided by τ before normalising: the temperature cancels", '''
def nt_xent(z1, z2, temperature=0.5):
    n = len(z1)
    z = F.normalize(torch.cat([z1, z2]) / temperature, dim=1)
    logits = (z @ z.T).masked_fill(torch.eye(2 * n, dtype=torch.bool), float("-inf"))
    partner = torch.cat([torch.arange(n, 2 * n), torch.arange(n)])
    return F.cross_entropy(logits, partner)
'''),
    ],
    "triplet": [
        ("ε added to the norm instead of to the difference", '''
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False):
    def distance(x, y):
        return ((x - y).abs() ** p).sum(dim=-1) ** (1.0 / p) + eps

    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = torch.minimum(d_neg, distance(positive, negative))
    return torch.clamp(d_pos - d_neg + margin, min=0.0).mean()
'''),
        ("ε added to |x − y| instead of to x − y", '''
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False):
    def distance(x, y):
        return (((x - y).abs() + eps) ** p).sum(dim=-1) ** (1.0 / p)

    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = torch.minimum(d_neg, distance(positive, negative))
    return torch.clamp(d_pos - d_neg + margin, min=0.0).mean()
'''),
        ("swap replaces d(a, n) by d(p, n) instead of taking the smaller", '''
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False):
    def distance(x, y):
        return ((x - y + eps).abs() ** p).sum(dim=-1) ** (1.0 / p)

    d_pos = distance(anchor, positive)
    d_neg = distance(positive, negative) if swap else distance(anchor, negative)
    return torch.clamp(d_pos - d_neg + margin, min=0.0).mean()
'''),
        ("swap distance taken from the negative: d(n, p)", '''
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False):
    def distance(x, y):
        return ((x - y + eps).abs() ** p).sum(dim=-1) ** (1.0 / p)

    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = torch.minimum(d_neg, distance(negative, positive))
    return torch.clamp(d_pos - d_neg + margin, min=0.0).mean()
'''),
        ("hinge the wrong way round: d(a, n) − d(a, p) + m", '''
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False):
    def distance(x, y):
        return ((x - y + eps).abs() ** p).sum(dim=-1) ** (1.0 / p)

    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = torch.minimum(d_neg, distance(positive, negative))
    return F.relu(d_neg - d_pos + margin).mean()
'''),
        ("the norm taken over the batch (dim 0) instead of the features", '''
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False):
    def distance(x, y):
        return ((x - y + eps).abs() ** p).sum(dim=0) ** (1.0 / p)

    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = torch.minimum(d_neg, distance(positive, negative))
    return torch.clamp(d_pos - d_neg + margin, min=0.0).mean()
'''),
        ("a square root whatever p is", '''
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False):
    def distance(x, y):
        return torch.sqrt(((x - y + eps).abs() ** p).sum(dim=-1))

    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = torch.minimum(d_neg, distance(positive, negative))
    return torch.clamp(d_pos - d_neg + margin, min=0.0).mean()
'''),
        ("torch.dist: one distance for the whole batch", '''
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False):
    d_pos = torch.dist(anchor + eps, positive, p)
    d_neg = torch.dist(anchor + eps, negative, p)
    if swap:
        d_neg = torch.minimum(d_neg, torch.dist(positive + eps, negative, p))
    return torch.clamp(d_pos - d_neg + margin, min=0.0)
'''),
        ("averaged over the active triplets only", '''
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False):
    def distance(x, y):
        return ((x - y + eps).abs() ** p).sum(dim=-1) ** (1.0 / p)

    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = torch.minimum(d_neg, distance(positive, negative))
    losses = d_pos - d_neg + margin
    return losses[losses > 0].mean()
'''),
    ],
    "knn": [
        ("features normalised along dim 0 (over the examples)", '''
def knn_predict(train_features, train_labels, query_features, k, num_classes):
    train = F.normalize(train_features, dim=0)
    query = F.normalize(query_features, dim=0)
    nearest = (query @ train.T).topk(k, dim=1).indices
    votes = F.one_hot(train_labels[nearest], num_classes).sum(dim=1)
    return votes.argmax(dim=1)
'''),
        ("only the queries normalised", '''
def knn_predict(train_features, train_labels, query_features, k, num_classes):
    query = F.normalize(query_features, dim=1)
    nearest = (query @ train_features.T).topk(k, dim=1).indices
    votes = F.one_hot(train_labels[nearest], num_classes).sum(dim=1)
    return votes.argmax(dim=1)
'''),
        ("votes weighted by the similarity (DINO's weighted k-NN)", '''
def knn_predict(train_features, train_labels, query_features, k, num_classes):
    sim = F.normalize(query_features, dim=1) @ F.normalize(train_features, dim=1).T
    top = sim.topk(k, dim=1)
    votes = torch.zeros(len(query_features), num_classes, dtype=sim.dtype)
    votes.scatter_add_(1, train_labels[top.indices], top.values)
    return votes.argmax(dim=1)
'''),
        ("the most similar neighbour dropped, as if the query were in the training set", '''
def knn_predict(train_features, train_labels, query_features, k, num_classes):
    train = F.normalize(train_features, dim=1)
    query = F.normalize(query_features, dim=1)
    nearest = (query @ train.T).topk(k + 1, dim=1).indices[:, 1:]
    votes = F.one_hot(train_labels[nearest], num_classes).sum(dim=1)
    return votes.argmax(dim=1)
'''),
        ("the votes' argmax over the wrong axis (dim 0)", '''
def knn_predict(train_features, train_labels, query_features, k, num_classes):
    train = F.normalize(train_features, dim=1)
    query = F.normalize(query_features, dim=1)
    nearest = (query @ train.T).topk(k, dim=1).indices
    votes = F.one_hot(train_labels[nearest], num_classes).sum(dim=1)
    return votes.argmax(dim=0)
'''),
        ("cosine distances 1 − cos with topk's largest values", '''
def knn_predict(train_features, train_labels, query_features, k, num_classes):
    distance = 1 - F.normalize(query_features, dim=1) @ F.normalize(train_features, dim=1).T
    nearest = distance.topk(k, dim=1).indices
    votes = F.one_hot(train_labels[nearest], num_classes).sum(dim=1)
    return votes.argmax(dim=1)
'''),
        ("the neighbours' indices vote instead of their labels", '''
def knn_predict(train_features, train_labels, query_features, k, num_classes):
    train = F.normalize(train_features, dim=1)
    query = F.normalize(query_features, dim=1)
    nearest = (query @ train.T).topk(k, dim=1).indices
    votes = F.one_hot(nearest, len(train_labels)).sum(dim=1)
    return train_labels[votes.argmax(dim=1)]
'''),
        ("similarities transposed: for each training point its k nearest queries", '''
def knn_predict(train_features, train_labels, query_features, k, num_classes):
    train = F.normalize(train_features, dim=1)
    query = F.normalize(query_features, dim=1)
    nearest = (train @ query.T).topk(k, dim=1).indices
    votes = F.one_hot(train_labels[nearest], num_classes).sum(dim=1)
    return votes.argmax(dim=1)
'''),
    ],
}

PASSES_VISIBLE = {}
