"""Plausible wrong answers for chapter 11. Each must fail that exercise's hidden tests.

MUTANTS maps an exercise (answer cell ``<exercise>_answer``, hidden tests ``<exercise>_hidden``) to
(what is wrong, the wrong answer cell's source). Cells with several functions redefine all of them. An answer
that calls the library its exercise is checked against without a runtime guard catching it (NT-Xent through
pytorch-metric-learning, k-NN through scikit-learn) is the static check's to flag: tests/callthroughs.py and
autograder/core/oracles.toml.
VISIBLE names the wrong answers that the exercise's visible test catches too.
"""

_ROTATION = '''
def rotation_batch(images):
    turns = [images]
    for _ in range(3):
        turns.append({turn})
    labels = {labels}
    return torch.cat(turns), labels
'''

_JIGSAW = '''
def jigsaw_batch(images, permutations, choice):
    b, c, h, w = images.shape
    tiles = images.reshape(b, c, 2, h // 2, 2, w // 2).permute({axes}).reshape(b, 4, c, h // 2, w // 2)
    order = {order}
    return tiles[torch.arange(b)[:, None], order], choice.clone()
'''


def pretext(turn="turns[-1].transpose(-2, -1).flip(-2)",
            labels="torch.arange(4, device=images.device).repeat_interleave(len(images))",
            axes="0, 2, 4, 1, 3, 5", order="permutations[choice]"):
    return _ROTATION.format(turn=turn, labels=labels) + _JIGSAW.format(axes=axes, order=order)


_PRETEXT_ROT90 = pretext(turn="torch.rot90(turns[-1], 1, dims=(-2, -1))")

_VIEWS = '''
def simclr_views(images, generator, *, scale=(0.2, 1.0), flip=0.5, jitter=0.4):
    b, _, h, w = images.shape

    def uniform(low, high):
        return low + (high - low) * torch.rand(b, generator=generator, dtype=torch.float64)

    def one_view():
        area = {area}
        ratio = torch.exp(uniform(math.log(3 / 4), math.log(4 / 3)))
        box_w = torch.round(w * torch.sqrt(area * {ratio})).clamp(1, w).long()
        box_h = torch.round(h * torch.sqrt(area / {ratio})).clamp(1, h).long()
        top = {top}
        left = torch.floor(uniform(0.0, 1.0) * (w - box_w + 1)).long()
        view = selfsup.resized_crop(images, top, left, box_h, box_w)
        flipped = uniform(0.0, 1.0) < flip
        view = torch.where(flipped[:, None, None, None], view.flip({flip_dim}), view)
        factor = {factor}
        return {out}

    {pair}
'''


def views(area="uniform(*scale)", ratio="ratio", top="torch.floor(uniform(0.0, 1.0) * (h - box_h + 1)).long()",
          flip_dim="-1", factor="uniform(1 - jitter, 1 + jitter).to(images.dtype)",
          out="(view * factor[:, None, None, None]).clamp(0.0, 1.0)", pair="return one_view(), one_view()"):
    return _VIEWS.format(area=area, ratio=ratio, top=top, flip_dim=flip_dim, factor=factor, out=out, pair=pair)


_VIEWS_GLOBAL_RNG = views().replace("torch.rand(b, generator=generator, dtype=torch.float64)",
                                    "torch.rand(b, dtype=torch.float64)")

_NTXENT = '''
def nt_xent(z1, z2, temperature=0.5):
    n = len(z1)
    z = {z}
    logits = {logits}
    itself = torch.eye(2 * n, dtype=torch.bool)
    logits = {mask}
    partner = {partner}
    return {loss}
'''


def ntxent(z="F.normalize(torch.cat([z1, z2]), dim=1)", logits="z @ z.T / temperature",
           mask='logits.masked_fill(itself, float("-inf"))',
           partner="torch.cat([torch.arange(n, 2 * n), torch.arange(n)])", loss="F.cross_entropy(logits, partner)"):
    return _NTXENT.format(z=z, logits=logits, mask=mask, partner=partner, loss=loss)


_NTXENT_NAIVE = '''
def nt_xent(z1, z2, temperature=0.5):
    n = len(z1)
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    e = torch.exp(z @ z.T / temperature)
    e = e * (1 - torch.eye(2 * n))
    partner = torch.cat([torch.arange(n, 2 * n), torch.arange(n)])
    return -torch.log(e[torch.arange(2 * n), partner] / e.sum(dim=1)).mean()
'''

_NTXENT_ONE_WAY = '''
def nt_xent(z1, z2, temperature=0.5):
    a, b = F.normalize(z1, dim=1), F.normalize(z2, dim=1)
    n = len(a)
    logits = torch.cat([a @ b.T, (a @ a.T).masked_fill(torch.eye(n, dtype=torch.bool), float("-inf"))], dim=1)
    return F.cross_entropy(logits / temperature, torch.arange(n))
'''


_TRIPLET = '''
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False):
    def distance(x, y):
        return {distance}

    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = {swap}
    return {loss}
'''


def triplet(distance="((x - y + eps).abs() ** p).sum(dim=-1) ** (1.0 / p)",
            swap="torch.minimum(d_neg, distance(positive, negative))",
            loss="torch.clamp(d_pos - d_neg + margin, min=0.0).mean()"):
    return _TRIPLET.format(distance=distance, swap=swap, loss=loss)


_TRIPLET_TORCH = '''
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False):
    return F.triplet_margin_loss(anchor, positive, negative, margin=margin, p=p, eps=eps, swap=swap)
'''

_KNN = '''
def knn_predict(train_features, train_labels, query_features, k, num_classes):
    train = {train}
    query = {query}
    nearest = {nearest}
    votes = F.one_hot(train_labels[nearest], num_classes).sum(dim=1)
    return {vote}
'''


def knn(train="F.normalize(train_features, dim=1)", query="F.normalize(query_features, dim=1)",
        nearest="(query @ train.T).topk(k, dim=1).indices", vote="votes.argmax(dim=1)"):
    return _KNN.format(train=train, query=query, nearest=nearest, vote=vote)



MUTANTS = {
    "pretext": [
        ("a clockwise quarter turn", pretext(turn="turns[-1].transpose(-2, -1).flip(-1)")),
        ("labels interleaved image by image instead of block by block",
         pretext(labels="torch.arange(4, device=images.device).repeat(len(images))")),
        ("tiles read column by column", pretext(axes="0, 4, 2, 1, 3, 5")),
        ("the inverse permutation applied", pretext(order="permutations[choice].argsort(dim=1)")),
        ("calls torch.rot90", _PRETEXT_ROT90),
    ],
    "views": [
        ("both views share one crop, flip and brightness", views(pair="v = one_view()\n    return v, v.clone()")),
        ("the scale range read as the side's fraction, not the area's",
         views(area="uniform(*scale) ** 2")),
        ("square crops only: the aspect ratio ignored", views(ratio="1.0")),
        ("the crop always at the top", views(top="torch.zeros(b, dtype=torch.long)")),
        ("flips upside down", views(flip_dim="-2")),
        ("brightness added, not multiplied", views(out="(view + factor[:, None, None, None] - 1).clamp(0.0, 1.0)")),
        ("one brightness factor for the whole batch",
         views(factor="uniform(1 - jitter, 1 + jitter)[:1].expand(b).to(images.dtype)")),
        ("draws from the global random state", _VIEWS_GLOBAL_RNG),
    ],
    "ntxent": [
        ("a view's similarity with itself left in the denominator", ntxent(mask="logits")),
        ("dot products instead of cosine similarities", ntxent(z="torch.cat([z1, z2])")),
        ("the temperature multiplies", ntxent(logits="z @ z.T * temperature")),
        ("the partner taken as the next row", ntxent(partner="(torch.arange(2 * n) + 1) % (2 * n)")),
        ("exponentials without log-sum-exp: overflows at small temperatures", _NTXENT_NAIVE),
        ("only the N views of the first batch as anchors", _NTXENT_ONE_WAY),
    ],
    "triplet": [
        ("squared distances", triplet(distance="((x - y + eps).abs() ** p).sum(dim=-1)")),
        ("ε left out of the distance", triplet(distance="((x - y).abs() ** p).sum(dim=-1) ** (1.0 / p)")),
        ("swap takes the larger negative distance", triplet(swap="torch.maximum(d_neg, distance(positive, negative))")),
        ("no hinge at zero", triplet(loss="(d_pos - d_neg + margin).mean()")),
        ("summed over the batch", triplet(loss="torch.clamp(d_pos - d_neg + margin, min=0.0).sum()")),
        ("calls F.triplet_margin_loss", _TRIPLET_TORCH),
    ],
    "knn": [
        ("Euclidean nearest neighbours", knn(nearest="torch.cdist(query_features, train_features).topk(k, dim=1, "
                                             "largest=False).indices")),
        ("dot products without normalising", knn(train="train_features", query="query_features")),
        ("the k least similar points vote", knn(nearest="(query @ train.T).topk(k, dim=1, largest=False).indices")),
        ("ties go to the largest class", knn(vote="num_classes - 1 - votes.flip(1).argmax(dim=1)")),
    ],
}

# The planted answers each exercise's visible test fails as well: the student sees them before the grade.
VISIBLE = {
    "pretext": ["a clockwise quarter turn", "labels interleaved image by image instead of block by block",
                "tiles read column by column", "the inverse permutation applied"],
    "views": ["both views share one crop, flip and brightness", "flips upside down",
              "one brightness factor for the whole batch", "draws from the global random state"],
    "ntxent": ["a view's similarity with itself left in the denominator", "dot products instead of cosine similarities",
               "the temperature multiplies", "the partner taken as the next row",
               "exponentials without log-sum-exp: overflows at small temperatures",
               "only the N views of the first batch as anchors"],
    "triplet": ["squared distances", "ε left out of the distance", "swap takes the larger negative distance",
                "no hinge at zero", "summed over the batch"],
    "knn": ["Euclidean nearest neighbours", "dot products without normalising", "the k least similar points vote",
            "ties go to the largest class"],
}
