"""Chapter 03, BERT and masked language modelling.

* :mod:`~dlcourse.bert.train` — the WordPiece vocabulary, NSP pairs, pre-training and fine-tuning, MiniLM offline;
* :mod:`~dlcourse.bert.model` — BERT's encoder layer as a reference block, and Hugging Face's BERT in the
  course's parameter names (the chapter's oracle);
* :mod:`~dlcourse.bert.widgets` — the masking viewer, the fill-mask explorer, MiniLM's attention heads;
* :mod:`~dlcourse.bert.diagrams` — the input embeddings and the pre-training heads.
"""
