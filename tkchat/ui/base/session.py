"""The conversation as the model reads it: system prompt, sampling and messages. Tk-free.

The transcript shows a conversation; this holds what the next request is made of. Keeping it
apart from the widgets means "what does the model see after an edit, a regenerate or a
conversation switch?" can be answered (and tested) without a window.

Main thread only (the window owns it; workers get an immutable request).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tkchat.conversation import Message, Sampling
from tkchat.generate.backend import GenerationRequest


@dataclass
class ChatSession:
    """``default_*`` start every new conversation; an opened one brings its own."""

    default_system_prompt: str
    default_sampling: Sampling
    system_prompt: str = ""
    sampling: Sampling = field(default_factory=Sampling)
    messages: list[Message] = field(default_factory=list)  # system first, when there is one
    # Regenerations of the last answer: with a fixed seed each one takes the next seed.
    regenerations: int = 0

    def __post_init__(self) -> None:
        self.start_new()

    def start_new(self) -> None:
        """A new conversation, from the defaults."""
        self.system_prompt, self.sampling = self.default_system_prompt, self.default_sampling
        self.messages = self._system()
        self.regenerations = 0

    def open(self, system_prompt: str, sampling: Sampling, chat: list[Message]) -> None:
        """A saved conversation, with its own system prompt and sampling."""
        self.system_prompt, self.sampling = system_prompt, sampling
        self.messages = self._system() + [m for m in chat if m.role != "system"]
        self.regenerations = 0

    def ask(self, question: str) -> None:
        self.messages.append(Message("user", question))
        self.regenerations = 0

    def answered(self, answer: str) -> None:
        self.messages.append(Message("assistant", answer))

    def replace(self, index: int, content: str) -> None:
        """Chat message ``index`` (the system prompt is not counted) now says ``content``:
        another version of an answer was chosen, and the chat goes on from it."""
        at = self._chat_start + index
        self.messages[at] = Message(self.messages[at].role, content)

    def rewind(self, keep: int) -> None:
        """Keep the first ``keep`` chat messages (the system prompt is not counted)."""
        del self.messages[self._chat_start + keep :]

    @property
    def _chat_start(self) -> int:
        """Where the chat messages begin in ``messages``: after the system prompt, if any."""
        return 1 if self.messages and self.messages[0].role == "system" else 0

    def configure(self, system_prompt: str, sampling: Sampling) -> None:
        """From the next answer on, for this conversation and as the defaults of new ones."""
        self.system_prompt, self.sampling = system_prompt, sampling
        self.default_system_prompt, self.default_sampling = system_prompt, sampling
        chat = [m for m in self.messages if m.role != "system"]
        self.messages = self._system() + chat

    def request(self) -> GenerationRequest:
        """What the model is asked to answer now."""
        return GenerationRequest(tuple(self.messages), self.sampling)

    def request_for(self, question: str) -> GenerationRequest:
        """What the model would be asked if ``question`` were sent now (nothing is kept)."""
        messages = (*self.messages, Message("user", question))
        return GenerationRequest(messages, self.sampling)

    def regenerate_request(self, versions: int = 0) -> GenerationRequest:
        """The same chat again. With a fixed seed the same chat gives the same answer, so
        each regenerate of this answer takes the next seed: it differs and is still
        reproducible. ``versions``: how many the answer has already (a reopened chat's
        were counted before this window): the new one takes the seed after all of theirs."""
        self.regenerations = max(self.regenerations + 1, versions)
        seed = self.sampling.seed
        if seed is None:
            return self.request()
        sampling = replace(self.sampling, seed=(seed + self.regenerations) % 2**32)
        return GenerationRequest(tuple(self.messages), sampling)

    @property
    def chat(self) -> list[Message]:
        """The messages without the system prompt."""
        return [m for m in self.messages if m.role != "system"]

    def _system(self) -> list[Message]:
        return [Message("system", self.system_prompt)] if self.system_prompt else []
