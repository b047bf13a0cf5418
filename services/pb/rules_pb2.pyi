from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetGameRequest(_message.Message):
    __slots__ = ("game",)
    GAME_FIELD_NUMBER: _ClassVar[int]
    game: str
    def __init__(self, game: _Optional[str] = ...) -> None: ...

class GameComponents(_message.Message):
    __slots__ = ("info", "components_json")
    INFO_FIELD_NUMBER: _ClassVar[int]
    COMPONENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    info: GameInfo
    components_json: str
    def __init__(self, info: _Optional[_Union[GameInfo, _Mapping]] = ..., components_json: _Optional[str] = ...) -> None: ...

class ListGamesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GameInfo(_message.Message):
    __slots__ = ("id", "title", "min_players", "max_players", "simultaneous", "options_json")
    ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    MIN_PLAYERS_FIELD_NUMBER: _ClassVar[int]
    MAX_PLAYERS_FIELD_NUMBER: _ClassVar[int]
    SIMULTANEOUS_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_JSON_FIELD_NUMBER: _ClassVar[int]
    id: str
    title: str
    min_players: int
    max_players: int
    simultaneous: bool
    options_json: str
    def __init__(self, id: _Optional[str] = ..., title: _Optional[str] = ..., min_players: _Optional[int] = ..., max_players: _Optional[int] = ..., simultaneous: _Optional[bool] = ..., options_json: _Optional[str] = ...) -> None: ...

class ListGamesResponse(_message.Message):
    __slots__ = ("games",)
    GAMES_FIELD_NUMBER: _ClassVar[int]
    games: _containers.RepeatedCompositeFieldContainer[GameInfo]
    def __init__(self, games: _Optional[_Iterable[_Union[GameInfo, _Mapping]]] = ...) -> None: ...

class NewGameRequest(_message.Message):
    __slots__ = ("game", "players", "seed", "options_json", "view_seats", "derive")
    GAME_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_JSON_FIELD_NUMBER: _ClassVar[int]
    VIEW_SEATS_FIELD_NUMBER: _ClassVar[int]
    DERIVE_FIELD_NUMBER: _ClassVar[int]
    game: str
    players: int
    seed: int
    options_json: str
    view_seats: _containers.RepeatedScalarFieldContainer[int]
    derive: bool
    def __init__(self, game: _Optional[str] = ..., players: _Optional[int] = ..., seed: _Optional[int] = ..., options_json: _Optional[str] = ..., view_seats: _Optional[_Iterable[int]] = ..., derive: _Optional[bool] = ...) -> None: ...

class GameState(_message.Message):
    __slots__ = ("game", "state", "to_act", "finished", "seats", "result_json", "views", "sides", "scores", "winners", "legal", "descriptions")
    GAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TO_ACT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    VIEWS_FIELD_NUMBER: _ClassVar[int]
    SIDES_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    WINNERS_FIELD_NUMBER: _ClassVar[int]
    LEGAL_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTIONS_FIELD_NUMBER: _ClassVar[int]
    game: str
    state: bytes
    to_act: _containers.RepeatedScalarFieldContainer[int]
    finished: bool
    seats: int
    result_json: str
    views: _containers.RepeatedCompositeFieldContainer[SeatView]
    sides: _containers.RepeatedCompositeFieldContainer[Side]
    scores: _containers.RepeatedScalarFieldContainer[float]
    winners: _containers.RepeatedScalarFieldContainer[int]
    legal: _containers.RepeatedCompositeFieldContainer[SeatMoves]
    descriptions: _containers.RepeatedCompositeFieldContainer[SeatDescription]
    def __init__(self, game: _Optional[str] = ..., state: _Optional[bytes] = ..., to_act: _Optional[_Iterable[int]] = ..., finished: _Optional[bool] = ..., seats: _Optional[int] = ..., result_json: _Optional[str] = ..., views: _Optional[_Iterable[_Union[SeatView, _Mapping]]] = ..., sides: _Optional[_Iterable[_Union[Side, _Mapping]]] = ..., scores: _Optional[_Iterable[float]] = ..., winners: _Optional[_Iterable[int]] = ..., legal: _Optional[_Iterable[_Union[SeatMoves, _Mapping]]] = ..., descriptions: _Optional[_Iterable[_Union[SeatDescription, _Mapping]]] = ...) -> None: ...

class SeatDescription(_message.Message):
    __slots__ = ("seat", "description_json")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_JSON_FIELD_NUMBER: _ClassVar[int]
    seat: int
    description_json: str
    def __init__(self, seat: _Optional[int] = ..., description_json: _Optional[str] = ...) -> None: ...

class SeatMoves(_message.Message):
    __slots__ = ("seat", "moves_json")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    MOVES_JSON_FIELD_NUMBER: _ClassVar[int]
    seat: int
    moves_json: str
    def __init__(self, seat: _Optional[int] = ..., moves_json: _Optional[str] = ...) -> None: ...

class Side(_message.Message):
    __slots__ = ("seats",)
    SEATS_FIELD_NUMBER: _ClassVar[int]
    seats: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, seats: _Optional[_Iterable[int]] = ...) -> None: ...

class SeatView(_message.Message):
    __slots__ = ("seat", "view_json")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    VIEW_JSON_FIELD_NUMBER: _ClassVar[int]
    seat: int
    view_json: str
    def __init__(self, seat: _Optional[int] = ..., view_json: _Optional[str] = ...) -> None: ...

class LegalMovesRequest(_message.Message):
    __slots__ = ("game", "state", "seat")
    GAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    game: str
    state: bytes
    seat: int
    def __init__(self, game: _Optional[str] = ..., state: _Optional[bytes] = ..., seat: _Optional[int] = ...) -> None: ...

class LegalMovesResponse(_message.Message):
    __slots__ = ("moves_json",)
    MOVES_JSON_FIELD_NUMBER: _ClassVar[int]
    moves_json: str
    def __init__(self, moves_json: _Optional[str] = ...) -> None: ...

class ApplyMoveRequest(_message.Message):
    __slots__ = ("game", "state", "seat", "move_json", "view_seats", "derive", "describe", "quiet_seats")
    GAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    MOVE_JSON_FIELD_NUMBER: _ClassVar[int]
    VIEW_SEATS_FIELD_NUMBER: _ClassVar[int]
    DERIVE_FIELD_NUMBER: _ClassVar[int]
    DESCRIBE_FIELD_NUMBER: _ClassVar[int]
    QUIET_SEATS_FIELD_NUMBER: _ClassVar[int]
    game: str
    state: bytes
    seat: int
    move_json: str
    view_seats: _containers.RepeatedScalarFieldContainer[int]
    derive: bool
    describe: bool
    quiet_seats: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, game: _Optional[str] = ..., state: _Optional[bytes] = ..., seat: _Optional[int] = ..., move_json: _Optional[str] = ..., view_seats: _Optional[_Iterable[int]] = ..., derive: _Optional[bool] = ..., describe: _Optional[bool] = ..., quiet_seats: _Optional[_Iterable[int]] = ...) -> None: ...

class GetViewRequest(_message.Message):
    __slots__ = ("game", "state", "seat")
    GAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    game: str
    state: bytes
    seat: int
    def __init__(self, game: _Optional[str] = ..., state: _Optional[bytes] = ..., seat: _Optional[int] = ...) -> None: ...

class ViewResponse(_message.Message):
    __slots__ = ("view_json",)
    VIEW_JSON_FIELD_NUMBER: _ClassVar[int]
    view_json: str
    def __init__(self, view_json: _Optional[str] = ...) -> None: ...

class GetResultRequest(_message.Message):
    __slots__ = ("game", "state")
    GAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    game: str
    state: bytes
    def __init__(self, game: _Optional[str] = ..., state: _Optional[bytes] = ...) -> None: ...

class ResultResponse(_message.Message):
    __slots__ = ("finished", "result_json", "scores", "winners")
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    WINNERS_FIELD_NUMBER: _ClassVar[int]
    finished: bool
    result_json: str
    scores: _containers.RepeatedScalarFieldContainer[float]
    winners: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, finished: _Optional[bool] = ..., result_json: _Optional[str] = ..., scores: _Optional[_Iterable[float]] = ..., winners: _Optional[_Iterable[int]] = ...) -> None: ...
