"""The date-normalisation data set (chapters 01, 02 and 05): a function from inputs to targets, seeded, offline."""

import datetime as dt

import pytest
import torch

from dlcourse.datasets import dates


def test_one_date_per_input_by_default_and_seeded():
    a, b = dates.generate(50, seed=3), dates.generate(50, seed=3)
    assert a == b
    assert a != dates.generate(50, seed=4)
    for pair in a:
        assert dates.count_dates(pair) == 1
        assert dt.date.fromisoformat(pair.target)
        assert dates.SEPARATOR not in pair.source


def test_several_dates_are_listed_in_order():
    pairs = dates.generate(300, seed=0, max_dates=3)
    counts = {dates.count_dates(p) for p in pairs}
    assert counts == {1, 2, 3}
    for pair in pairs:
        parts, days = pair.source.split(dates.SEPARATOR), pair.target.split(" ")
        assert len(parts) == len(days) == len(pair.fmt.split(" | "))
        for text, iso, fmt in zip(parts, days, pair.fmt.split(" | "), strict=True):
            locale, pattern = fmt.split(" ", 1)
            assert dates.write_date(dt.date.fromisoformat(iso), locale, pattern) == text


def test_every_format_is_unambiguous_over_the_whole_range():
    written: dict[str, dt.date] = {}
    day = dates.FIRST
    while day <= dates.LAST:
        for locale, pattern in dates.FORMATS:
            text = dates.write_date(day, locale, pattern)
            assert written.setdefault(text, day) == day, f"{text!r} means {written[text]} and {day}"
        day += dt.timedelta(days=97)  # a stride that visits every month and weekday


def test_vocabularies_cover_every_character_and_round_trip():
    D = dates.load(n_train=400, n_test=100, seed=1, sentences=True, max_dates=3)
    for pair in D.train + D.test:
        assert dates.UNK not in D.vocab_in.encode(pair.source)
        assert D.vocab_out.decode(D.vocab_out.encode(pair.target, eos=True)) == pair.target
    assert not {p.source for p in D.test} & {p.source for p in D.train}
    src, lengths, tgt = D.tensors(D.test)
    assert src.shape[0] == tgt.shape[0] == lengths.shape[0] == len(D.test)
    assert int(lengths.max()) == src.shape[1]
    assert "\u202f" not in "".join(p.source for p in D.train)


def test_bad_count_is_refused():
    with pytest.raises(ValueError, match="max_dates"):
        dates.generate(3, seed=0, max_dates=0)


def test_exact_match_needs_the_whole_target_up_to_eos():
    vocab = dates.vocabularies()[1]
    targets, _ = dates.pad_batch([vocab.encode("1999-12-04", eos=True), vocab.encode("1", eos=True)])  # (2, 11)
    right = targets.clone()
    right[1, 2:] = torch.tensor(vocab.encode("999999999"))  # after <eos> a batched decoder writes on: ignored
    assert dates.exact_match(right, targets).tolist() == [True, True]
    longer = torch.cat([right, torch.full((2, 4), 5)], dim=1)  # extra columns after <eos> change nothing
    assert dates.exact_match(longer, targets).tolist() == [True, True]
    wrong_digit = right.clone()
    wrong_digit[0, 3] = vocab.encode("8")[0]
    assert dates.exact_match(wrong_digit, targets).tolist() == [False, True]
    no_eos = right.clone()
    no_eos[0, 10] = vocab.encode("0")[0]  # runs on instead of stopping
    early = right.clone()
    early[0, 4] = dates.EOS  # stops before the end
    assert dates.exact_match(no_eos, targets).tolist() == [False, True]
    assert dates.exact_match(early, targets).tolist() == [False, True]
    assert dates.exact_match(right[:, :5], targets).tolist() == [False, True]  # too short to hold the date
    with pytest.raises(ValueError):
        dates.exact_match(right[0], targets)
