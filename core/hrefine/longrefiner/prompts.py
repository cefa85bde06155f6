"""The published prompts of the three LongRefiner steps.

They are the strings the authors' LoRA adapters were trained on (query analysis, document
structuring, global selection), so a user who loads those adapters gets the inputs they expect.
They are facts needed for compatibility; override them through the options for other models.
"""

from __future__ import annotations

__all__ = [
    "ANALYSIS_INSTRUCTIONS",
    "ANALYSIS_SYSTEM",
    "ANALYSIS_USER",
    "CHOICES",
    "SELECTION_INSTRUCTIONS",
    "SELECTION_SYSTEM",
    "SELECTION_USER",
    "STRUCTURE_INSTRUCTIONS",
    "STRUCTURE_SYSTEM",
    "STRUCTURE_USER",
    "outline_text",
]

#: Step 1, query analysis: system message and user message (``{question}``).
ANALYSIS_SYSTEM = "\nYou are an assistant that performs step-by-step analysis of user queries."
ANALYSIS_USER = "\n{question}"
#: The two answers of step 1, local first.
CHOICES = ("[Local]", "[Global]")

#: Step 2, document structuring: system message and user message (``{doc_content}``).
STRUCTURE_SYSTEM = (
    "Divide the following long text into well-structured, appropriately sized chapters."
)
STRUCTURE_USER = "{doc_content}"

#: Step 3, global selection: system message and user message (``{abstract}``, ``{outline}``,
#: ``{question}``).
SELECTION_SYSTEM = (
    "You will be provided with three inputs:\n"
    "1. An user question that may need a long-form detail answer.\n"
    "2. The abstract of a document\n"
    "3. Outline of the document, contains titles of section and subsections in the document.\n"
    "\n"
    "Your task is to understand the article based on its abstract and outline, and select all "
    "the parts that are helpful for answering questions (provide corresponding titles, or "
    "`abstract`).\n"
)
SELECTION_USER = (
    "**Document abstract**: {abstract}\n**Document outline**: {outline}\n**Question**:{question}"
    "\nOutput:"
)


def outline_text(title: str, sections: list[tuple[str, list[str]]]) -> str:
    """The outline of step 3: a ``Title:`` line, then ``Section{i}: …`` lines, each followed by
    its ``Subsection{j}: …`` lines (``j`` counts within the section, from 1)."""
    lines = [f"Title: {title}"]
    for i, (section, subsections) in enumerate(sections, start=1):
        lines.append(f"Section{i}: {section}")
        lines.extend(f"Subsection{j}: {sub}" for j, sub in enumerate(subsections, start=1))
    return "\n".join(lines) + "\n"


#: Step 1 for a model without the authors' adapter: the paper's annotation instructions in
#: short (appendix, prompt A), so an untuned chat model answers with one of the two labels.
ANALYSIS_INSTRUCTIONS = (
    "Classify the query by the information it needs. Answer [Local] when it has a clear, "
    "fixed answer found in a few text fragments (a factual question). Answer [Global] when it "
    "needs broad knowledge or an understanding of the whole document (a summary or an "
    "open-ended question). Reply with [Local] or [Global] only."
)

#: Step 2 for a model without the authors' adapter: the output format spelt out.
STRUCTURE_INSTRUCTIONS = (
    "Divide the following long text into well-structured, appropriately sized chapters. "
    "Do not rewrite the text. Write <abstract>...</abstract> for the opening text, then each "
    "chapter as <section: Title> ... </section: Title>, with optional "
    "<sub-section: Title> ... </sub-section: Title> inside. Write each paragraph as its first "
    "8 words, then ..., then its last 8 words, and separate paragraphs with <br>."
)

#: Step 3 for a model without the authors' adapter: ask for the list in a parseable form.
SELECTION_INSTRUCTIONS = (
    "\nAnswer with a JSON list of the chosen titles, copied exactly from the outline "
    '(for example ["abstract", "Results"]).'
)
