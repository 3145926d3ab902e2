"""Helper package of the course *Deep Learning from Scratch: attention, Transformers and generative models*.

One package per chapter holds everything of that chapter that is not the student's exercise (its data
preparation and training, the reference blocks later chapters reuse, its widgets and its architecture figures):

=====================================  ==========================
chapter                                package
=====================================  ==========================
00 welcome                             :mod:`dlcourse.welcome`
01 seq2seq with attention              :mod:`dlcourse.seq2seq`
02 Transformer blocks                  :mod:`dlcourse.transformer`
03 BERT and masked language modelling  :mod:`dlcourse.bert`
04 GPT and decoding                    :mod:`dlcourse.gpt`
05 T5                                  :mod:`dlcourse.t5`
06 Vision Transformer                  :mod:`dlcourse.vit`
07 GANs                                :mod:`dlcourse.gan`
08 VAEs                                :mod:`dlcourse.vae`
09 sparse attention                    :mod:`dlcourse.sparse`
10 optimizers and schedulers           :mod:`dlcourse.optim`
11 self-supervised learning            :mod:`dlcourse.selfsup`
=====================================  ==========================

A chapter's package imports only the ground floor, :mod:`dlcourse.datasets` and the packages of earlier
chapters (tests/test_imports.py). The data sets several chapters share are in :mod:`dlcourse.datasets`
(dates, the synthetic tasks, Shakespeare, Fashion-MNIST). The ground floor, shared by all:

* :mod:`dlcourse.runtime` — device, seeds, the FAST switch, environment report;
* :mod:`dlcourse.presentation` — lecture mode's on/off words;
* :mod:`dlcourse.checks` — what test cells call: comparisons that say what is wrong, guards, oracles;
* :mod:`dlcourse.grading` — the grading agent in the student's kernel and the grader's proxies;
* :mod:`dlcourse.claims` — a number the text states, printed beside the number a run measured;
* :mod:`dlcourse.training` — a small training loop with progress bar and live loss plot;
* :mod:`dlcourse.widgets` — the widget pattern and the attention heat map;
* :mod:`dlcourse.attention` — capturing attention weights; :mod:`dlcourse.layout` — a Hugging Face module seen
  through the course's parameter names;
* :mod:`dlcourse.diagrams` — the conventions and drawing helpers of the chapters' architecture figures;
* :mod:`dlcourse.data` — offline data and checkpoints; :mod:`dlcourse.assets` — verified pretrained model files;
* :mod:`dlcourse.validate`, :mod:`dlcourse.onimport` — notebook validation; hooks run when a module is imported.
"""

__version__ = "0.1.0"

# chapter -> its package, in course order (a package may import only those above it)
CHAPTERS = {
    "00_welcome": "dlcourse.welcome",
    "01_seq2seq_attention": "dlcourse.seq2seq",
    "02_transformer_blocks": "dlcourse.transformer",
    "03_bert_mlm": "dlcourse.bert",
    "04_gpt_decoding": "dlcourse.gpt",
    "05_t5": "dlcourse.t5",
    "06_vit": "dlcourse.vit",
    "07_gan": "dlcourse.gan",
    "08_vae": "dlcourse.vae",
    "09_sparse_attention": "dlcourse.sparse",
    "10_optimizers_schedulers": "dlcourse.optim",
    "11_self_supervised": "dlcourse.selfsup",
}
