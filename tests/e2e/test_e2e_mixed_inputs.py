"""End to end over mixed retrieved inputs: an HTML page, Markdown with a table, plain text and an
empty document, in an LCEL chain and behind a LlamaIndex query engine, with the embedded models.
"""

from __future__ import annotations

from pathlib import Path

from e2e_helpers import BUDGET, CORPUS, RecordingChatModel, contains_answer, load_corpus
from hrefine.budget import get_counter
from hrefine.models import Embedder
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnablePassthrough

from langchain_hrefine import CompressionRetriever, HtmlRagCompressor

MARKDOWN = """# Lighthouses of the Kattegat

Lighthouses guard the strait between Denmark and Sweden. Most were automated in the 1980s.

| Lighthouse | Country | First lit | Height (m) |
|---|---|---|---|
| Anholt | Denmark | 1788 | 39 |
| Hesselø | Denmark | 1865 | 18 |
| Nidingen | Sweden | 1946 | 39 |
| Kullen | Sweden | 1900 | 15 |
| Fornæs | Denmark | 1892 | 23 |
| Skagen | Denmark | 1858 | 46 |

## Keepers

- Keepers lived on Anholt until 1989.
- Hesselø had two keepers' houses.
"""

TEXT = """Minutes of the harbour board, 3 March

Present: the chair, the treasurer and four members.
Item 1: the new pier opens on 14 June; the ferry moves there in July.
Item 2: mooring fees rise by 4 percent from next year.

Any other business: none.
"""

QUESTION_TABLE = "In which year was the Hesselø lighthouse first lit?"
QUESTION_TEXT = "When does the new pier open?"


def _documents(shared_data: Path) -> list[Document]:
    (doc, html) = load_corpus(shared_data)[0]
    return [
        Document(page_content=html, metadata={"source": doc}),
        Document(page_content=MARKDOWN, metadata={"source": "lighthouses.md"}),
        Document(page_content=TEXT, metadata={"source": "minutes.txt"}),
        Document(page_content="   ", metadata={"source": "empty.txt"}),
    ]


class AllDocuments(BaseRetriever):
    """A base retriever returning every document (so every kind reaches the compressor)."""

    documents: list[Document]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return list(self.documents)


async def test_lcel_chain_over_html_markdown_text_and_an_empty_document(
    shared_data: Path,
) -> None:
    retriever = CompressionRetriever(
        base_retriever=AllDocuments(documents=_documents(shared_data)),
        base_compressor=HtmlRagCompressor(max_tokens=256),
    )
    model = RecordingChatModel(responses=["1865", "14 June"])
    prompt = ChatPromptTemplate.from_messages([("system", "Context:\n{context}"), ("human", "{q}")])

    def context_of(docs: list[Document]) -> str:
        return "\n".join(d.page_content for d in docs)

    chain = {"context": retriever | context_of, "q": RunnablePassthrough()} | prompt | model
    chain = chain | StrOutputParser()

    assert chain.invoke(QUESTION_TABLE) == "1865"
    context = str(model.received[-1][0].content)
    # The Markdown table came through as a table: header and the answering row as cells.
    assert "<th>Lighthouse" in context and "<td>Hesselø<td>Denmark<td>1865" in context
    assert get_counter(None).count(context.split("\n", 1)[1]) <= 256

    docs = await retriever.ainvoke(QUESTION_TEXT)
    assert docs[0].metadata["source"] == "minutes.txt"  # most relevant first
    assert docs[0].metadata["hrefine_input_format"] == "text"
    # Plain text keeps its lines: the answering line is whole, on its own.
    assert "Item 1: the new pier opens on 14 June; the ferry moves there in July." in (
        docs[0].page_content
    )
    # The empty document is left out and counted, not an error.
    assert "empty.txt" not in {d.metadata["source"] for d in docs}
    assert all(d.metadata["hrefine_dropped_documents"] >= 1 for d in docs)
    assert all(0.0 <= d.metadata["relevance_score"] <= 1.0 for d in docs)


def test_llamaindex_query_engine_over_mixed_documents_with_a_similarity_cutoff(
    shared_data: Path, embedder: Embedder
) -> None:
    from llama_index.core import Document as LIDocument
    from llama_index.core import VectorStoreIndex
    from llama_index.core.llms import MockLLM
    from llama_index.core.postprocessor import SimilarityPostprocessor
    from llama_index.core.schema import MetadataMode

    from llamaindex_hrefine import HtmlPageNodeParser, HtmlRagNodePostprocessor
    from llamaindex_hrefine._convert import HrefineEmbedding

    docs = [LIDocument(text=d.page_content, metadata=d.metadata) for d in _documents(shared_data)]
    index = VectorStoreIndex.from_documents(
        docs,
        transformations=[HtmlPageNodeParser(chunk_size=512)],
        embed_model=HrefineEmbedding(embedder),
    )
    engine = index.as_query_engine(
        llm=MockLLM(),
        similarity_top_k=4,
        node_postprocessors=[
            HtmlRagNodePostprocessor(max_tokens=BUDGET),
            SimilarityPostprocessor(similarity_cutoff=0.3),
        ],
    )
    response = engine.query(QUESTION_TABLE)
    sources = response.source_nodes
    assert sources and sources[0].node.metadata["source"] == "lighthouses.md"
    text = sources[0].node.get_content(metadata_mode=MetadataMode.NONE)
    assert contains_answer(text, ["Hesselø", "1865"]) and "<th>Lighthouse" in text
    # The cut-off after the pruner keeps relevant nodes only: the stations page's are gone.
    assert all(n.score is not None and n.score >= 0.3 for n in sources)
    assert CORPUS[0] not in {n.node.metadata["source"] for n in sources}
    assert "1865" in str(response)
