
// Generated from Hspmd.g4 by ANTLR 4.7.2



#include "HspmdParser.h"


using namespace antlrcpp;
using namespace hspmd::grammar;
using namespace antlr4;

HspmdParser::HspmdParser(TokenStream *input) : Parser(input) {
  _interpreter = new atn::ParserATNSimulator(this, _atn, _decisionToDFA, _sharedContextCache);
}

HspmdParser::~HspmdParser() {
  delete _interpreter;
}

std::string HspmdParser::getGrammarFileName() const {
  return "Hspmd.g4";
}

const std::vector<std::string>& HspmdParser::getRuleNames() const {
  return _ruleNames;
}

dfa::Vocabulary& HspmdParser::getVocabulary() const {
  return _vocabulary;
}


//----------------- FileContext ------------------------------------------------------------------

HspmdParser::FileContext::FileContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

tree::TerminalNode* HspmdParser::FileContext::EOF() {
  return getToken(HspmdParser::EOF, 0);
}

std::vector<HspmdParser::ImportDeclContext *> HspmdParser::FileContext::importDecl() {
  return getRuleContexts<HspmdParser::ImportDeclContext>();
}

HspmdParser::ImportDeclContext* HspmdParser::FileContext::importDecl(size_t i) {
  return getRuleContext<HspmdParser::ImportDeclContext>(i);
}

std::vector<HspmdParser::TopDeclContext *> HspmdParser::FileContext::topDecl() {
  return getRuleContexts<HspmdParser::TopDeclContext>();
}

HspmdParser::TopDeclContext* HspmdParser::FileContext::topDecl(size_t i) {
  return getRuleContext<HspmdParser::TopDeclContext>(i);
}


size_t HspmdParser::FileContext::getRuleIndex() const {
  return HspmdParser::RuleFile;
}


HspmdParser::FileContext* HspmdParser::file() {
  FileContext *_localctx = _tracker.createInstance<FileContext>(_ctx, getState());
  enterRule(_localctx, 0, HspmdParser::RuleFile);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(81);
    _errHandler->sync(this);
    _la = _input->LA(1);
    while (_la == HspmdParser::T__0) {
      setState(78);
      importDecl();
      setState(83);
      _errHandler->sync(this);
      _la = _input->LA(1);
    }
    setState(87);
    _errHandler->sync(this);
    _la = _input->LA(1);
    while ((((_la & ~ 0x3fULL) == 0) &&
      ((1ULL << _la) & ((1ULL << HspmdParser::T__1)
      | (1ULL << HspmdParser::T__2)
      | (1ULL << HspmdParser::T__26))) != 0)) {
      setState(84);
      topDecl();
      setState(89);
      _errHandler->sync(this);
      _la = _input->LA(1);
    }
    setState(90);
    match(HspmdParser::EOF);
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- ImportDeclContext ------------------------------------------------------------------

HspmdParser::ImportDeclContext::ImportDeclContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

tree::TerminalNode* HspmdParser::ImportDeclContext::STRING() {
  return getToken(HspmdParser::STRING, 0);
}


size_t HspmdParser::ImportDeclContext::getRuleIndex() const {
  return HspmdParser::RuleImportDecl;
}


HspmdParser::ImportDeclContext* HspmdParser::importDecl() {
  ImportDeclContext *_localctx = _tracker.createInstance<ImportDeclContext>(_ctx, getState());
  enterRule(_localctx, 2, HspmdParser::RuleImportDecl);

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(92);
    match(HspmdParser::T__0);
    setState(93);
    match(HspmdParser::STRING);
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- TopDeclContext ------------------------------------------------------------------

HspmdParser::TopDeclContext::TopDeclContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

HspmdParser::ModuleDeclContext* HspmdParser::TopDeclContext::moduleDecl() {
  return getRuleContext<HspmdParser::ModuleDeclContext>(0);
}

HspmdParser::AliasDeclContext* HspmdParser::TopDeclContext::aliasDecl() {
  return getRuleContext<HspmdParser::AliasDeclContext>(0);
}

HspmdParser::PlanDeclContext* HspmdParser::TopDeclContext::planDecl() {
  return getRuleContext<HspmdParser::PlanDeclContext>(0);
}


size_t HspmdParser::TopDeclContext::getRuleIndex() const {
  return HspmdParser::RuleTopDecl;
}


HspmdParser::TopDeclContext* HspmdParser::topDecl() {
  TopDeclContext *_localctx = _tracker.createInstance<TopDeclContext>(_ctx, getState());
  enterRule(_localctx, 4, HspmdParser::RuleTopDecl);

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    setState(98);
    _errHandler->sync(this);
    switch (getInterpreter<atn::ParserATNSimulator>()->adaptivePredict(_input, 2, _ctx)) {
    case 1: {
      enterOuterAlt(_localctx, 1);
      setState(95);
      moduleDecl();
      break;
    }

    case 2: {
      enterOuterAlt(_localctx, 2);
      setState(96);
      aliasDecl();
      break;
    }

    case 3: {
      enterOuterAlt(_localctx, 3);
      setState(97);
      planDecl();
      break;
    }

    }
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- ModuleDeclContext ------------------------------------------------------------------

HspmdParser::ModuleDeclContext::ModuleDeclContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

HspmdParser::IdentContext* HspmdParser::ModuleDeclContext::ident() {
  return getRuleContext<HspmdParser::IdentContext>(0);
}

std::vector<HspmdParser::ModuleParamContext *> HspmdParser::ModuleDeclContext::moduleParam() {
  return getRuleContexts<HspmdParser::ModuleParamContext>();
}

HspmdParser::ModuleParamContext* HspmdParser::ModuleDeclContext::moduleParam(size_t i) {
  return getRuleContext<HspmdParser::ModuleParamContext>(i);
}

std::vector<HspmdParser::MemberDeclContext *> HspmdParser::ModuleDeclContext::memberDecl() {
  return getRuleContexts<HspmdParser::MemberDeclContext>();
}

HspmdParser::MemberDeclContext* HspmdParser::ModuleDeclContext::memberDecl(size_t i) {
  return getRuleContext<HspmdParser::MemberDeclContext>(i);
}


size_t HspmdParser::ModuleDeclContext::getRuleIndex() const {
  return HspmdParser::RuleModuleDecl;
}


HspmdParser::ModuleDeclContext* HspmdParser::moduleDecl() {
  ModuleDeclContext *_localctx = _tracker.createInstance<ModuleDeclContext>(_ctx, getState());
  enterRule(_localctx, 6, HspmdParser::RuleModuleDecl);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    size_t alt;
    enterOuterAlt(_localctx, 1);
    setState(100);
    dynamic_cast<ModuleDeclContext *>(_localctx)->kind = _input->LT(1);
    _la = _input->LA(1);
    if (!(_la == HspmdParser::T__1

    || _la == HspmdParser::T__2)) {
      dynamic_cast<ModuleDeclContext *>(_localctx)->kind = _errHandler->recoverInline(this);
    }
    else {
      _errHandler->reportMatch(this);
      consume();
    }
    setState(101);
    dynamic_cast<ModuleDeclContext *>(_localctx)->name = ident();
    setState(102);
    match(HspmdParser::T__3);
    setState(114);
    _errHandler->sync(this);

    _la = _input->LA(1);
    if ((((_la & ~ 0x3fULL) == 0) &&
      ((1ULL << _la) & ((1ULL << HspmdParser::T__28)
      | (1ULL << HspmdParser::T__29)
      | (1ULL << HspmdParser::T__30)
      | (1ULL << HspmdParser::T__31)
      | (1ULL << HspmdParser::T__33)
      | (1ULL << HspmdParser::T__34)
      | (1ULL << HspmdParser::T__35)
      | (1ULL << HspmdParser::T__36)
      | (1ULL << HspmdParser::T__37)
      | (1ULL << HspmdParser::T__38)
      | (1ULL << HspmdParser::T__41)
      | (1ULL << HspmdParser::T__42)
      | (1ULL << HspmdParser::T__43)
      | (1ULL << HspmdParser::T__44)
      | (1ULL << HspmdParser::T__45)
      | (1ULL << HspmdParser::T__46)
      | (1ULL << HspmdParser::T__47)
      | (1ULL << HspmdParser::T__48)
      | (1ULL << HspmdParser::T__49)
      | (1ULL << HspmdParser::T__50)
      | (1ULL << HspmdParser::T__52)
      | (1ULL << HspmdParser::T__54)
      | (1ULL << HspmdParser::IDENT))) != 0)) {
      setState(103);
      moduleParam();
      setState(108);
      _errHandler->sync(this);
      alt = getInterpreter<atn::ParserATNSimulator>()->adaptivePredict(_input, 3, _ctx);
      while (alt != 2 && alt != atn::ATN::INVALID_ALT_NUMBER) {
        if (alt == 1) {
          setState(104);
          match(HspmdParser::T__4);
          setState(105);
          moduleParam(); 
        }
        setState(110);
        _errHandler->sync(this);
        alt = getInterpreter<atn::ParserATNSimulator>()->adaptivePredict(_input, 3, _ctx);
      }
      setState(112);
      _errHandler->sync(this);

      _la = _input->LA(1);
      if (_la == HspmdParser::T__4) {
        setState(111);
        match(HspmdParser::T__4);
      }
    }
    setState(116);
    match(HspmdParser::T__5);
    setState(117);
    match(HspmdParser::T__6);
    setState(121);
    _errHandler->sync(this);
    _la = _input->LA(1);
    while ((((_la & ~ 0x3fULL) == 0) &&
      ((1ULL << _la) & ((1ULL << HspmdParser::T__1)
      | (1ULL << HspmdParser::T__10)
      | (1ULL << HspmdParser::T__14)
      | (1ULL << HspmdParser::T__15))) != 0)) {
      setState(118);
      memberDecl();
      setState(123);
      _errHandler->sync(this);
      _la = _input->LA(1);
    }
    setState(124);
    match(HspmdParser::T__7);
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- AliasDeclContext ------------------------------------------------------------------

HspmdParser::AliasDeclContext::AliasDeclContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

HspmdParser::CallArgsContext* HspmdParser::AliasDeclContext::callArgs() {
  return getRuleContext<HspmdParser::CallArgsContext>(0);
}

std::vector<HspmdParser::IdentContext *> HspmdParser::AliasDeclContext::ident() {
  return getRuleContexts<HspmdParser::IdentContext>();
}

HspmdParser::IdentContext* HspmdParser::AliasDeclContext::ident(size_t i) {
  return getRuleContext<HspmdParser::IdentContext>(i);
}


size_t HspmdParser::AliasDeclContext::getRuleIndex() const {
  return HspmdParser::RuleAliasDecl;
}


HspmdParser::AliasDeclContext* HspmdParser::aliasDecl() {
  AliasDeclContext *_localctx = _tracker.createInstance<AliasDeclContext>(_ctx, getState());
  enterRule(_localctx, 8, HspmdParser::RuleAliasDecl);

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(126);
    match(HspmdParser::T__2);
    setState(127);
    dynamic_cast<AliasDeclContext *>(_localctx)->name = ident();
    setState(128);
    match(HspmdParser::T__8);
    setState(129);
    dynamic_cast<AliasDeclContext *>(_localctx)->target = ident();
    setState(130);
    callArgs();
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- ModuleParamContext ------------------------------------------------------------------

HspmdParser::ModuleParamContext::ModuleParamContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

std::vector<HspmdParser::IdentContext *> HspmdParser::ModuleParamContext::ident() {
  return getRuleContexts<HspmdParser::IdentContext>();
}

HspmdParser::IdentContext* HspmdParser::ModuleParamContext::ident(size_t i) {
  return getRuleContext<HspmdParser::IdentContext>(i);
}

HspmdParser::ExprContext* HspmdParser::ModuleParamContext::expr() {
  return getRuleContext<HspmdParser::ExprContext>(0);
}


size_t HspmdParser::ModuleParamContext::getRuleIndex() const {
  return HspmdParser::RuleModuleParam;
}


HspmdParser::ModuleParamContext* HspmdParser::moduleParam() {
  ModuleParamContext *_localctx = _tracker.createInstance<ModuleParamContext>(_ctx, getState());
  enterRule(_localctx, 10, HspmdParser::RuleModuleParam);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(132);
    dynamic_cast<ModuleParamContext *>(_localctx)->name = ident();
    setState(133);
    match(HspmdParser::T__9);
    setState(134);
    dynamic_cast<ModuleParamContext *>(_localctx)->typeName = ident();
    setState(137);
    _errHandler->sync(this);

    _la = _input->LA(1);
    if (_la == HspmdParser::T__8) {
      setState(135);
      match(HspmdParser::T__8);
      setState(136);
      expr(0);
    }
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- MemberDeclContext ------------------------------------------------------------------

HspmdParser::MemberDeclContext::MemberDeclContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

HspmdParser::ParamDeclContext* HspmdParser::MemberDeclContext::paramDecl() {
  return getRuleContext<HspmdParser::ParamDeclContext>(0);
}

HspmdParser::SublayerDeclContext* HspmdParser::MemberDeclContext::sublayerDecl() {
  return getRuleContext<HspmdParser::SublayerDeclContext>(0);
}

HspmdParser::ConstDeclContext* HspmdParser::MemberDeclContext::constDecl() {
  return getRuleContext<HspmdParser::ConstDeclContext>(0);
}

HspmdParser::FnDeclContext* HspmdParser::MemberDeclContext::fnDecl() {
  return getRuleContext<HspmdParser::FnDeclContext>(0);
}


size_t HspmdParser::MemberDeclContext::getRuleIndex() const {
  return HspmdParser::RuleMemberDecl;
}


HspmdParser::MemberDeclContext* HspmdParser::memberDecl() {
  MemberDeclContext *_localctx = _tracker.createInstance<MemberDeclContext>(_ctx, getState());
  enterRule(_localctx, 12, HspmdParser::RuleMemberDecl);

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    setState(143);
    _errHandler->sync(this);
    switch (_input->LA(1)) {
      case HspmdParser::T__10: {
        enterOuterAlt(_localctx, 1);
        setState(139);
        paramDecl();
        break;
      }

      case HspmdParser::T__1: {
        enterOuterAlt(_localctx, 2);
        setState(140);
        sublayerDecl();
        break;
      }

      case HspmdParser::T__14: {
        enterOuterAlt(_localctx, 3);
        setState(141);
        constDecl();
        break;
      }

      case HspmdParser::T__15: {
        enterOuterAlt(_localctx, 4);
        setState(142);
        fnDecl();
        break;
      }

    default:
      throw NoViableAltException(this);
    }
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- ParamDeclContext ------------------------------------------------------------------

HspmdParser::ParamDeclContext::ParamDeclContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

std::vector<HspmdParser::IdentContext *> HspmdParser::ParamDeclContext::ident() {
  return getRuleContexts<HspmdParser::IdentContext>();
}

HspmdParser::IdentContext* HspmdParser::ParamDeclContext::ident(size_t i) {
  return getRuleContext<HspmdParser::IdentContext>(i);
}

HspmdParser::ExprListContext* HspmdParser::ParamDeclContext::exprList() {
  return getRuleContext<HspmdParser::ExprListContext>(0);
}

HspmdParser::CallArgsContext* HspmdParser::ParamDeclContext::callArgs() {
  return getRuleContext<HspmdParser::CallArgsContext>(0);
}


size_t HspmdParser::ParamDeclContext::getRuleIndex() const {
  return HspmdParser::RuleParamDecl;
}


HspmdParser::ParamDeclContext* HspmdParser::paramDecl() {
  ParamDeclContext *_localctx = _tracker.createInstance<ParamDeclContext>(_ctx, getState());
  enterRule(_localctx, 14, HspmdParser::RuleParamDecl);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(145);
    match(HspmdParser::T__10);
    setState(146);
    dynamic_cast<ParamDeclContext *>(_localctx)->name = ident();
    setState(149);
    _errHandler->sync(this);

    _la = _input->LA(1);
    if (_la == HspmdParser::T__9) {
      setState(147);
      match(HspmdParser::T__9);
      setState(148);
      dynamic_cast<ParamDeclContext *>(_localctx)->dtype = ident();
    }
    setState(151);
    match(HspmdParser::T__8);
    setState(152);
    dynamic_cast<ParamDeclContext *>(_localctx)->init = ident();
    setState(153);
    match(HspmdParser::T__11);
    setState(155);
    _errHandler->sync(this);

    _la = _input->LA(1);
    if ((((_la & ~ 0x3fULL) == 0) &&
      ((1ULL << _la) & ((1ULL << HspmdParser::T__3)
      | (1ULL << HspmdParser::T__11)
      | (1ULL << HspmdParser::T__19)
      | (1ULL << HspmdParser::T__24)
      | (1ULL << HspmdParser::T__25)
      | (1ULL << HspmdParser::T__28)
      | (1ULL << HspmdParser::T__29)
      | (1ULL << HspmdParser::T__30)
      | (1ULL << HspmdParser::T__31)
      | (1ULL << HspmdParser::T__33)
      | (1ULL << HspmdParser::T__34)
      | (1ULL << HspmdParser::T__35)
      | (1ULL << HspmdParser::T__36)
      | (1ULL << HspmdParser::T__37)
      | (1ULL << HspmdParser::T__38)
      | (1ULL << HspmdParser::T__41)
      | (1ULL << HspmdParser::T__42)
      | (1ULL << HspmdParser::T__43)
      | (1ULL << HspmdParser::T__44)
      | (1ULL << HspmdParser::T__45)
      | (1ULL << HspmdParser::T__46)
      | (1ULL << HspmdParser::T__47)
      | (1ULL << HspmdParser::T__48)
      | (1ULL << HspmdParser::T__49)
      | (1ULL << HspmdParser::T__50)
      | (1ULL << HspmdParser::T__52)
      | (1ULL << HspmdParser::T__54)
      | (1ULL << HspmdParser::INT)
      | (1ULL << HspmdParser::FLOAT)
      | (1ULL << HspmdParser::STRING)
      | (1ULL << HspmdParser::IDENT))) != 0)) {
      setState(154);
      exprList();
    }
    setState(157);
    match(HspmdParser::T__12);
    setState(159);
    _errHandler->sync(this);

    _la = _input->LA(1);
    if (_la == HspmdParser::T__3) {
      setState(158);
      callArgs();
    }
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- SublayerDeclContext ------------------------------------------------------------------

HspmdParser::SublayerDeclContext::SublayerDeclContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

HspmdParser::CallArgsContext* HspmdParser::SublayerDeclContext::callArgs() {
  return getRuleContext<HspmdParser::CallArgsContext>(0);
}

std::vector<HspmdParser::IdentContext *> HspmdParser::SublayerDeclContext::ident() {
  return getRuleContexts<HspmdParser::IdentContext>();
}

HspmdParser::IdentContext* HspmdParser::SublayerDeclContext::ident(size_t i) {
  return getRuleContext<HspmdParser::IdentContext>(i);
}

HspmdParser::ExprContext* HspmdParser::SublayerDeclContext::expr() {
  return getRuleContext<HspmdParser::ExprContext>(0);
}


size_t HspmdParser::SublayerDeclContext::getRuleIndex() const {
  return HspmdParser::RuleSublayerDecl;
}


HspmdParser::SublayerDeclContext* HspmdParser::sublayerDecl() {
  SublayerDeclContext *_localctx = _tracker.createInstance<SublayerDeclContext>(_ctx, getState());
  enterRule(_localctx, 16, HspmdParser::RuleSublayerDecl);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(161);
    match(HspmdParser::T__1);
    setState(162);
    dynamic_cast<SublayerDeclContext *>(_localctx)->name = ident();
    setState(163);
    match(HspmdParser::T__8);
    setState(164);
    dynamic_cast<SublayerDeclContext *>(_localctx)->callee = ident();
    setState(165);
    callArgs();
    setState(168);
    _errHandler->sync(this);

    _la = _input->LA(1);
    if (_la == HspmdParser::T__13) {
      setState(166);
      match(HspmdParser::T__13);
      setState(167);
      dynamic_cast<SublayerDeclContext *>(_localctx)->count = expr(0);
    }
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- ConstDeclContext ------------------------------------------------------------------

HspmdParser::ConstDeclContext::ConstDeclContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

HspmdParser::ExprContext* HspmdParser::ConstDeclContext::expr() {
  return getRuleContext<HspmdParser::ExprContext>(0);
}

HspmdParser::IdentContext* HspmdParser::ConstDeclContext::ident() {
  return getRuleContext<HspmdParser::IdentContext>(0);
}


size_t HspmdParser::ConstDeclContext::getRuleIndex() const {
  return HspmdParser::RuleConstDecl;
}


HspmdParser::ConstDeclContext* HspmdParser::constDecl() {
  ConstDeclContext *_localctx = _tracker.createInstance<ConstDeclContext>(_ctx, getState());
  enterRule(_localctx, 18, HspmdParser::RuleConstDecl);

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(170);
    match(HspmdParser::T__14);
    setState(171);
    dynamic_cast<ConstDeclContext *>(_localctx)->name = ident();
    setState(172);
    match(HspmdParser::T__8);
    setState(173);
    expr(0);
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- FnDeclContext ------------------------------------------------------------------

HspmdParser::FnDeclContext::FnDeclContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

HspmdParser::BlockContext* HspmdParser::FnDeclContext::block() {
  return getRuleContext<HspmdParser::BlockContext>(0);
}

HspmdParser::IdentContext* HspmdParser::FnDeclContext::ident() {
  return getRuleContext<HspmdParser::IdentContext>(0);
}

std::vector<HspmdParser::FnParamContext *> HspmdParser::FnDeclContext::fnParam() {
  return getRuleContexts<HspmdParser::FnParamContext>();
}

HspmdParser::FnParamContext* HspmdParser::FnDeclContext::fnParam(size_t i) {
  return getRuleContext<HspmdParser::FnParamContext>(i);
}

HspmdParser::TypeExprContext* HspmdParser::FnDeclContext::typeExpr() {
  return getRuleContext<HspmdParser::TypeExprContext>(0);
}


size_t HspmdParser::FnDeclContext::getRuleIndex() const {
  return HspmdParser::RuleFnDecl;
}


HspmdParser::FnDeclContext* HspmdParser::fnDecl() {
  FnDeclContext *_localctx = _tracker.createInstance<FnDeclContext>(_ctx, getState());
  enterRule(_localctx, 20, HspmdParser::RuleFnDecl);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(175);
    match(HspmdParser::T__15);
    setState(176);
    dynamic_cast<FnDeclContext *>(_localctx)->name = ident();
    setState(177);
    match(HspmdParser::T__3);
    setState(186);
    _errHandler->sync(this);

    _la = _input->LA(1);
    if ((((_la & ~ 0x3fULL) == 0) &&
      ((1ULL << _la) & ((1ULL << HspmdParser::T__28)
      | (1ULL << HspmdParser::T__29)
      | (1ULL << HspmdParser::T__30)
      | (1ULL << HspmdParser::T__31)
      | (1ULL << HspmdParser::T__33)
      | (1ULL << HspmdParser::T__34)
      | (1ULL << HspmdParser::T__35)
      | (1ULL << HspmdParser::T__36)
      | (1ULL << HspmdParser::T__37)
      | (1ULL << HspmdParser::T__38)
      | (1ULL << HspmdParser::T__41)
      | (1ULL << HspmdParser::T__42)
      | (1ULL << HspmdParser::T__43)
      | (1ULL << HspmdParser::T__44)
      | (1ULL << HspmdParser::T__45)
      | (1ULL << HspmdParser::T__46)
      | (1ULL << HspmdParser::T__47)
      | (1ULL << HspmdParser::T__48)
      | (1ULL << HspmdParser::T__49)
      | (1ULL << HspmdParser::T__50)
      | (1ULL << HspmdParser::T__52)
      | (1ULL << HspmdParser::T__54)
      | (1ULL << HspmdParser::IDENT))) != 0)) {
      setState(178);
      fnParam();
      setState(183);
      _errHandler->sync(this);
      _la = _input->LA(1);
      while (_la == HspmdParser::T__4) {
        setState(179);
        match(HspmdParser::T__4);
        setState(180);
        fnParam();
        setState(185);
        _errHandler->sync(this);
        _la = _input->LA(1);
      }
    }
    setState(188);
    match(HspmdParser::T__5);
    setState(191);
    _errHandler->sync(this);

    _la = _input->LA(1);
    if (_la == HspmdParser::T__16) {
      setState(189);
      match(HspmdParser::T__16);
      setState(190);
      dynamic_cast<FnDeclContext *>(_localctx)->result = typeExpr();
    }
    setState(193);
    block();
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- FnParamContext ------------------------------------------------------------------

HspmdParser::FnParamContext::FnParamContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

HspmdParser::TypeExprContext* HspmdParser::FnParamContext::typeExpr() {
  return getRuleContext<HspmdParser::TypeExprContext>(0);
}

HspmdParser::IdentContext* HspmdParser::FnParamContext::ident() {
  return getRuleContext<HspmdParser::IdentContext>(0);
}


size_t HspmdParser::FnParamContext::getRuleIndex() const {
  return HspmdParser::RuleFnParam;
}


HspmdParser::FnParamContext* HspmdParser::fnParam() {
  FnParamContext *_localctx = _tracker.createInstance<FnParamContext>(_ctx, getState());
  enterRule(_localctx, 22, HspmdParser::RuleFnParam);

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(195);
    dynamic_cast<FnParamContext *>(_localctx)->name = ident();
    setState(196);
    match(HspmdParser::T__9);
    setState(197);
    typeExpr();
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- TypeExprContext ------------------------------------------------------------------

HspmdParser::TypeExprContext::TypeExprContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

HspmdParser::IdentContext* HspmdParser::TypeExprContext::ident() {
  return getRuleContext<HspmdParser::IdentContext>(0);
}

HspmdParser::ExprListContext* HspmdParser::TypeExprContext::exprList() {
  return getRuleContext<HspmdParser::ExprListContext>(0);
}


size_t HspmdParser::TypeExprContext::getRuleIndex() const {
  return HspmdParser::RuleTypeExpr;
}


HspmdParser::TypeExprContext* HspmdParser::typeExpr() {
  TypeExprContext *_localctx = _tracker.createInstance<TypeExprContext>(_ctx, getState());
  enterRule(_localctx, 24, HspmdParser::RuleTypeExpr);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(199);
    dynamic_cast<TypeExprContext *>(_localctx)->dtype = ident();
    setState(205);
    _errHandler->sync(this);

    _la = _input->LA(1);
    if (_la == HspmdParser::T__11) {
      setState(200);
      match(HspmdParser::T__11);
      setState(202);
      _errHandler->sync(this);

      _la = _input->LA(1);
      if ((((_la & ~ 0x3fULL) == 0) &&
        ((1ULL << _la) & ((1ULL << HspmdParser::T__3)
        | (1ULL << HspmdParser::T__11)
        | (1ULL << HspmdParser::T__19)
        | (1ULL << HspmdParser::T__24)
        | (1ULL << HspmdParser::T__25)
        | (1ULL << HspmdParser::T__28)
        | (1ULL << HspmdParser::T__29)
        | (1ULL << HspmdParser::T__30)
        | (1ULL << HspmdParser::T__31)
        | (1ULL << HspmdParser::T__33)
        | (1ULL << HspmdParser::T__34)
        | (1ULL << HspmdParser::T__35)
        | (1ULL << HspmdParser::T__36)
        | (1ULL << HspmdParser::T__37)
        | (1ULL << HspmdParser::T__38)
        | (1ULL << HspmdParser::T__41)
        | (1ULL << HspmdParser::T__42)
        | (1ULL << HspmdParser::T__43)
        | (1ULL << HspmdParser::T__44)
        | (1ULL << HspmdParser::T__45)
        | (1ULL << HspmdParser::T__46)
        | (1ULL << HspmdParser::T__47)
        | (1ULL << HspmdParser::T__48)
        | (1ULL << HspmdParser::T__49)
        | (1ULL << HspmdParser::T__50)
        | (1ULL << HspmdParser::T__52)
        | (1ULL << HspmdParser::T__54)
        | (1ULL << HspmdParser::INT)
        | (1ULL << HspmdParser::FLOAT)
        | (1ULL << HspmdParser::STRING)
        | (1ULL << HspmdParser::IDENT))) != 0)) {
        setState(201);
        exprList();
      }
      setState(204);
      match(HspmdParser::T__12);
    }
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- BlockContext ------------------------------------------------------------------

HspmdParser::BlockContext::BlockContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

std::vector<HspmdParser::StmtContext *> HspmdParser::BlockContext::stmt() {
  return getRuleContexts<HspmdParser::StmtContext>();
}

HspmdParser::StmtContext* HspmdParser::BlockContext::stmt(size_t i) {
  return getRuleContext<HspmdParser::StmtContext>(i);
}


size_t HspmdParser::BlockContext::getRuleIndex() const {
  return HspmdParser::RuleBlock;
}


HspmdParser::BlockContext* HspmdParser::block() {
  BlockContext *_localctx = _tracker.createInstance<BlockContext>(_ctx, getState());
  enterRule(_localctx, 26, HspmdParser::RuleBlock);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(207);
    match(HspmdParser::T__6);
    setState(211);
    _errHandler->sync(this);
    _la = _input->LA(1);
    while (_la == HspmdParser::T__14

    || _la == HspmdParser::T__17) {
      setState(208);
      stmt();
      setState(213);
      _errHandler->sync(this);
      _la = _input->LA(1);
    }
    setState(214);
    match(HspmdParser::T__7);
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- StmtContext ------------------------------------------------------------------

HspmdParser::StmtContext::StmtContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

HspmdParser::LetStmtContext* HspmdParser::StmtContext::letStmt() {
  return getRuleContext<HspmdParser::LetStmtContext>(0);
}

HspmdParser::ReturnStmtContext* HspmdParser::StmtContext::returnStmt() {
  return getRuleContext<HspmdParser::ReturnStmtContext>(0);
}


size_t HspmdParser::StmtContext::getRuleIndex() const {
  return HspmdParser::RuleStmt;
}


HspmdParser::StmtContext* HspmdParser::stmt() {
  StmtContext *_localctx = _tracker.createInstance<StmtContext>(_ctx, getState());
  enterRule(_localctx, 28, HspmdParser::RuleStmt);

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    setState(218);
    _errHandler->sync(this);
    switch (_input->LA(1)) {
      case HspmdParser::T__14: {
        enterOuterAlt(_localctx, 1);
        setState(216);
        letStmt();
        break;
      }

      case HspmdParser::T__17: {
        enterOuterAlt(_localctx, 2);
        setState(217);
        returnStmt();
        break;
      }

    default:
      throw NoViableAltException(this);
    }
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- LetStmtContext ------------------------------------------------------------------

HspmdParser::LetStmtContext::LetStmtContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

std::vector<HspmdParser::IdentContext *> HspmdParser::LetStmtContext::ident() {
  return getRuleContexts<HspmdParser::IdentContext>();
}

HspmdParser::IdentContext* HspmdParser::LetStmtContext::ident(size_t i) {
  return getRuleContext<HspmdParser::IdentContext>(i);
}

HspmdParser::ExprContext* HspmdParser::LetStmtContext::expr() {
  return getRuleContext<HspmdParser::ExprContext>(0);
}


size_t HspmdParser::LetStmtContext::getRuleIndex() const {
  return HspmdParser::RuleLetStmt;
}


HspmdParser::LetStmtContext* HspmdParser::letStmt() {
  LetStmtContext *_localctx = _tracker.createInstance<LetStmtContext>(_ctx, getState());
  enterRule(_localctx, 30, HspmdParser::RuleLetStmt);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(220);
    match(HspmdParser::T__14);
    setState(221);
    ident();
    setState(226);
    _errHandler->sync(this);
    _la = _input->LA(1);
    while (_la == HspmdParser::T__4) {
      setState(222);
      match(HspmdParser::T__4);
      setState(223);
      ident();
      setState(228);
      _errHandler->sync(this);
      _la = _input->LA(1);
    }
    setState(229);
    match(HspmdParser::T__8);
    setState(230);
    expr(0);
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- ReturnStmtContext ------------------------------------------------------------------

HspmdParser::ReturnStmtContext::ReturnStmtContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

HspmdParser::ExprContext* HspmdParser::ReturnStmtContext::expr() {
  return getRuleContext<HspmdParser::ExprContext>(0);
}


size_t HspmdParser::ReturnStmtContext::getRuleIndex() const {
  return HspmdParser::RuleReturnStmt;
}


HspmdParser::ReturnStmtContext* HspmdParser::returnStmt() {
  ReturnStmtContext *_localctx = _tracker.createInstance<ReturnStmtContext>(_ctx, getState());
  enterRule(_localctx, 32, HspmdParser::RuleReturnStmt);

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(232);
    match(HspmdParser::T__17);
    setState(233);
    expr(0);
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- ExprContext ------------------------------------------------------------------

HspmdParser::ExprContext::ExprContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}


size_t HspmdParser::ExprContext::getRuleIndex() const {
  return HspmdParser::RuleExpr;
}

void HspmdParser::ExprContext::copyFrom(ExprContext *ctx) {
  ParserRuleContext::copyFrom(ctx);
}

//----------------- IntExprContext ------------------------------------------------------------------

tree::TerminalNode* HspmdParser::IntExprContext::INT() {
  return getToken(HspmdParser::INT, 0);
}

HspmdParser::IntExprContext::IntExprContext(ExprContext *ctx) { copyFrom(ctx); }


//----------------- MemberExprContext ------------------------------------------------------------------

HspmdParser::ExprContext* HspmdParser::MemberExprContext::expr() {
  return getRuleContext<HspmdParser::ExprContext>(0);
}

HspmdParser::IdentContext* HspmdParser::MemberExprContext::ident() {
  return getRuleContext<HspmdParser::IdentContext>(0);
}

HspmdParser::MemberExprContext::MemberExprContext(ExprContext *ctx) { copyFrom(ctx); }


//----------------- ParenExprContext ------------------------------------------------------------------

HspmdParser::ExprContext* HspmdParser::ParenExprContext::expr() {
  return getRuleContext<HspmdParser::ExprContext>(0);
}

HspmdParser::ParenExprContext::ParenExprContext(ExprContext *ctx) { copyFrom(ctx); }


//----------------- NameExprContext ------------------------------------------------------------------

HspmdParser::IdentContext* HspmdParser::NameExprContext::ident() {
  return getRuleContext<HspmdParser::IdentContext>(0);
}

HspmdParser::NameExprContext::NameExprContext(ExprContext *ctx) { copyFrom(ctx); }


//----------------- StringExprContext ------------------------------------------------------------------

tree::TerminalNode* HspmdParser::StringExprContext::STRING() {
  return getToken(HspmdParser::STRING, 0);
}

HspmdParser::StringExprContext::StringExprContext(ExprContext *ctx) { copyFrom(ctx); }


//----------------- IndexExprContext ------------------------------------------------------------------

HspmdParser::ExprContext* HspmdParser::IndexExprContext::expr() {
  return getRuleContext<HspmdParser::ExprContext>(0);
}

HspmdParser::IndexItemContext* HspmdParser::IndexExprContext::indexItem() {
  return getRuleContext<HspmdParser::IndexItemContext>(0);
}

HspmdParser::IndexExprContext::IndexExprContext(ExprContext *ctx) { copyFrom(ctx); }


//----------------- FloatExprContext ------------------------------------------------------------------

tree::TerminalNode* HspmdParser::FloatExprContext::FLOAT() {
  return getToken(HspmdParser::FLOAT, 0);
}

HspmdParser::FloatExprContext::FloatExprContext(ExprContext *ctx) { copyFrom(ctx); }


//----------------- AddExprContext ------------------------------------------------------------------

std::vector<HspmdParser::ExprContext *> HspmdParser::AddExprContext::expr() {
  return getRuleContexts<HspmdParser::ExprContext>();
}

HspmdParser::ExprContext* HspmdParser::AddExprContext::expr(size_t i) {
  return getRuleContext<HspmdParser::ExprContext>(i);
}

HspmdParser::AddExprContext::AddExprContext(ExprContext *ctx) { copyFrom(ctx); }


//----------------- NegExprContext ------------------------------------------------------------------

HspmdParser::ExprContext* HspmdParser::NegExprContext::expr() {
  return getRuleContext<HspmdParser::ExprContext>(0);
}

HspmdParser::NegExprContext::NegExprContext(ExprContext *ctx) { copyFrom(ctx); }


//----------------- MulExprContext ------------------------------------------------------------------

std::vector<HspmdParser::ExprContext *> HspmdParser::MulExprContext::expr() {
  return getRuleContexts<HspmdParser::ExprContext>();
}

HspmdParser::ExprContext* HspmdParser::MulExprContext::expr(size_t i) {
  return getRuleContext<HspmdParser::ExprContext>(i);
}

HspmdParser::MulExprContext::MulExprContext(ExprContext *ctx) { copyFrom(ctx); }


//----------------- BoolExprContext ------------------------------------------------------------------

HspmdParser::BoolExprContext::BoolExprContext(ExprContext *ctx) { copyFrom(ctx); }


//----------------- CallExprContext ------------------------------------------------------------------

HspmdParser::ExprContext* HspmdParser::CallExprContext::expr() {
  return getRuleContext<HspmdParser::ExprContext>(0);
}

HspmdParser::CallArgsContext* HspmdParser::CallExprContext::callArgs() {
  return getRuleContext<HspmdParser::CallArgsContext>(0);
}

HspmdParser::CallExprContext::CallExprContext(ExprContext *ctx) { copyFrom(ctx); }


//----------------- ListExprContext ------------------------------------------------------------------

HspmdParser::ExprListContext* HspmdParser::ListExprContext::exprList() {
  return getRuleContext<HspmdParser::ExprListContext>(0);
}

HspmdParser::ListExprContext::ListExprContext(ExprContext *ctx) { copyFrom(ctx); }



HspmdParser::ExprContext* HspmdParser::expr() {
   return expr(0);
}

HspmdParser::ExprContext* HspmdParser::expr(int precedence) {
  ParserRuleContext *parentContext = _ctx;
  size_t parentState = getState();
  HspmdParser::ExprContext *_localctx = _tracker.createInstance<ExprContext>(_ctx, parentState);
  HspmdParser::ExprContext *previousContext = _localctx;
  (void)previousContext; // Silence compiler, in case the context is not used by generated code.
  size_t startState = 34;
  enterRecursionRule(_localctx, 34, HspmdParser::RuleExpr, precedence);

    size_t _la = 0;

  auto onExit = finally([=] {
    unrollRecursionContexts(parentContext);
  });
  try {
    size_t alt;
    enterOuterAlt(_localctx, 1);
    setState(252);
    _errHandler->sync(this);
    switch (_input->LA(1)) {
      case HspmdParser::T__19: {
        _localctx = _tracker.createInstance<NegExprContext>(_localctx);
        _ctx = _localctx;
        previousContext = _localctx;

        setState(236);
        match(HspmdParser::T__19);
        setState(237);
        expr(10);
        break;
      }

      case HspmdParser::T__3: {
        _localctx = _tracker.createInstance<ParenExprContext>(_localctx);
        _ctx = _localctx;
        previousContext = _localctx;
        setState(238);
        match(HspmdParser::T__3);
        setState(239);
        expr(0);
        setState(240);
        match(HspmdParser::T__5);
        break;
      }

      case HspmdParser::T__11: {
        _localctx = _tracker.createInstance<ListExprContext>(_localctx);
        _ctx = _localctx;
        previousContext = _localctx;
        setState(242);
        match(HspmdParser::T__11);
        setState(244);
        _errHandler->sync(this);

        _la = _input->LA(1);
        if ((((_la & ~ 0x3fULL) == 0) &&
          ((1ULL << _la) & ((1ULL << HspmdParser::T__3)
          | (1ULL << HspmdParser::T__11)
          | (1ULL << HspmdParser::T__19)
          | (1ULL << HspmdParser::T__24)
          | (1ULL << HspmdParser::T__25)
          | (1ULL << HspmdParser::T__28)
          | (1ULL << HspmdParser::T__29)
          | (1ULL << HspmdParser::T__30)
          | (1ULL << HspmdParser::T__31)
          | (1ULL << HspmdParser::T__33)
          | (1ULL << HspmdParser::T__34)
          | (1ULL << HspmdParser::T__35)
          | (1ULL << HspmdParser::T__36)
          | (1ULL << HspmdParser::T__37)
          | (1ULL << HspmdParser::T__38)
          | (1ULL << HspmdParser::T__41)
          | (1ULL << HspmdParser::T__42)
          | (1ULL << HspmdParser::T__43)
          | (1ULL << HspmdParser::T__44)
          | (1ULL << HspmdParser::T__45)
          | (1ULL << HspmdParser::T__46)
          | (1ULL << HspmdParser::T__47)
          | (1ULL << HspmdParser::T__48)
          | (1ULL << HspmdParser::T__49)
          | (1ULL << HspmdParser::T__50)
          | (1ULL << HspmdParser::T__52)
          | (1ULL << HspmdParser::T__54)
          | (1ULL << HspmdParser::INT)
          | (1ULL << HspmdParser::FLOAT)
          | (1ULL << HspmdParser::STRING)
          | (1ULL << HspmdParser::IDENT))) != 0)) {
          setState(243);
          exprList();
        }
        setState(246);
        match(HspmdParser::T__12);
        break;
      }

      case HspmdParser::INT: {
        _localctx = _tracker.createInstance<IntExprContext>(_localctx);
        _ctx = _localctx;
        previousContext = _localctx;
        setState(247);
        match(HspmdParser::INT);
        break;
      }

      case HspmdParser::FLOAT: {
        _localctx = _tracker.createInstance<FloatExprContext>(_localctx);
        _ctx = _localctx;
        previousContext = _localctx;
        setState(248);
        match(HspmdParser::FLOAT);
        break;
      }

      case HspmdParser::STRING: {
        _localctx = _tracker.createInstance<StringExprContext>(_localctx);
        _ctx = _localctx;
        previousContext = _localctx;
        setState(249);
        match(HspmdParser::STRING);
        break;
      }

      case HspmdParser::T__24:
      case HspmdParser::T__25: {
        _localctx = _tracker.createInstance<BoolExprContext>(_localctx);
        _ctx = _localctx;
        previousContext = _localctx;
        setState(250);
        _la = _input->LA(1);
        if (!(_la == HspmdParser::T__24

        || _la == HspmdParser::T__25)) {
        _errHandler->recoverInline(this);
        }
        else {
          _errHandler->reportMatch(this);
          consume();
        }
        break;
      }

      case HspmdParser::T__28:
      case HspmdParser::T__29:
      case HspmdParser::T__30:
      case HspmdParser::T__31:
      case HspmdParser::T__33:
      case HspmdParser::T__34:
      case HspmdParser::T__35:
      case HspmdParser::T__36:
      case HspmdParser::T__37:
      case HspmdParser::T__38:
      case HspmdParser::T__41:
      case HspmdParser::T__42:
      case HspmdParser::T__43:
      case HspmdParser::T__44:
      case HspmdParser::T__45:
      case HspmdParser::T__46:
      case HspmdParser::T__47:
      case HspmdParser::T__48:
      case HspmdParser::T__49:
      case HspmdParser::T__50:
      case HspmdParser::T__52:
      case HspmdParser::T__54:
      case HspmdParser::IDENT: {
        _localctx = _tracker.createInstance<NameExprContext>(_localctx);
        _ctx = _localctx;
        previousContext = _localctx;
        setState(251);
        ident();
        break;
      }

    default:
      throw NoViableAltException(this);
    }
    _ctx->stop = _input->LT(-1);
    setState(272);
    _errHandler->sync(this);
    alt = getInterpreter<atn::ParserATNSimulator>()->adaptivePredict(_input, 24, _ctx);
    while (alt != 2 && alt != atn::ATN::INVALID_ALT_NUMBER) {
      if (alt == 1) {
        if (!_parseListeners.empty())
          triggerExitRuleEvent();
        previousContext = _localctx;
        setState(270);
        _errHandler->sync(this);
        switch (getInterpreter<atn::ParserATNSimulator>()->adaptivePredict(_input, 23, _ctx)) {
        case 1: {
          auto newContext = _tracker.createInstance<MulExprContext>(_tracker.createInstance<ExprContext>(parentContext, parentState));
          _localctx = newContext;
          pushNewRecursionContext(newContext, startState, RuleExpr);
          setState(254);

          if (!(precpred(_ctx, 9))) throw FailedPredicateException(this, "precpred(_ctx, 9)");
          setState(255);
          dynamic_cast<MulExprContext *>(_localctx)->op = _input->LT(1);
          _la = _input->LA(1);
          if (!((((_la & ~ 0x3fULL) == 0) &&
            ((1ULL << _la) & ((1ULL << HspmdParser::T__13)
            | (1ULL << HspmdParser::T__20)
            | (1ULL << HspmdParser::T__21)
            | (1ULL << HspmdParser::T__22))) != 0))) {
            dynamic_cast<MulExprContext *>(_localctx)->op = _errHandler->recoverInline(this);
          }
          else {
            _errHandler->reportMatch(this);
            consume();
          }
          setState(256);
          expr(10);
          break;
        }

        case 2: {
          auto newContext = _tracker.createInstance<AddExprContext>(_tracker.createInstance<ExprContext>(parentContext, parentState));
          _localctx = newContext;
          pushNewRecursionContext(newContext, startState, RuleExpr);
          setState(257);

          if (!(precpred(_ctx, 8))) throw FailedPredicateException(this, "precpred(_ctx, 8)");
          setState(258);
          dynamic_cast<AddExprContext *>(_localctx)->op = _input->LT(1);
          _la = _input->LA(1);
          if (!(_la == HspmdParser::T__19

          || _la == HspmdParser::T__23)) {
            dynamic_cast<AddExprContext *>(_localctx)->op = _errHandler->recoverInline(this);
          }
          else {
            _errHandler->reportMatch(this);
            consume();
          }
          setState(259);
          expr(9);
          break;
        }

        case 3: {
          auto newContext = _tracker.createInstance<MemberExprContext>(_tracker.createInstance<ExprContext>(parentContext, parentState));
          _localctx = newContext;
          pushNewRecursionContext(newContext, startState, RuleExpr);
          setState(260);

          if (!(precpred(_ctx, 13))) throw FailedPredicateException(this, "precpred(_ctx, 13)");
          setState(261);
          match(HspmdParser::T__18);
          setState(262);
          ident();
          break;
        }

        case 4: {
          auto newContext = _tracker.createInstance<IndexExprContext>(_tracker.createInstance<ExprContext>(parentContext, parentState));
          _localctx = newContext;
          pushNewRecursionContext(newContext, startState, RuleExpr);
          setState(263);

          if (!(precpred(_ctx, 12))) throw FailedPredicateException(this, "precpred(_ctx, 12)");
          setState(264);
          match(HspmdParser::T__11);
          setState(265);
          indexItem();
          setState(266);
          match(HspmdParser::T__12);
          break;
        }

        case 5: {
          auto newContext = _tracker.createInstance<CallExprContext>(_tracker.createInstance<ExprContext>(parentContext, parentState));
          _localctx = newContext;
          pushNewRecursionContext(newContext, startState, RuleExpr);
          setState(268);

          if (!(precpred(_ctx, 11))) throw FailedPredicateException(this, "precpred(_ctx, 11)");
          setState(269);
          callArgs();
          break;
        }

        } 
      }
      setState(274);
      _errHandler->sync(this);
      alt = getInterpreter<atn::ParserATNSimulator>()->adaptivePredict(_input, 24, _ctx);
    }
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }
  return _localctx;
}

//----------------- IndexItemContext ------------------------------------------------------------------

HspmdParser::IndexItemContext::IndexItemContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

std::vector<HspmdParser::ExprContext *> HspmdParser::IndexItemContext::expr() {
  return getRuleContexts<HspmdParser::ExprContext>();
}

HspmdParser::ExprContext* HspmdParser::IndexItemContext::expr(size_t i) {
  return getRuleContext<HspmdParser::ExprContext>(i);
}


size_t HspmdParser::IndexItemContext::getRuleIndex() const {
  return HspmdParser::RuleIndexItem;
}


HspmdParser::IndexItemContext* HspmdParser::indexItem() {
  IndexItemContext *_localctx = _tracker.createInstance<IndexItemContext>(_ctx, getState());
  enterRule(_localctx, 36, HspmdParser::RuleIndexItem);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    setState(283);
    _errHandler->sync(this);
    switch (getInterpreter<atn::ParserATNSimulator>()->adaptivePredict(_input, 27, _ctx)) {
    case 1: {
      enterOuterAlt(_localctx, 1);
      setState(275);
      expr(0);
      break;
    }

    case 2: {
      enterOuterAlt(_localctx, 2);
      setState(277);
      _errHandler->sync(this);

      _la = _input->LA(1);
      if ((((_la & ~ 0x3fULL) == 0) &&
        ((1ULL << _la) & ((1ULL << HspmdParser::T__3)
        | (1ULL << HspmdParser::T__11)
        | (1ULL << HspmdParser::T__19)
        | (1ULL << HspmdParser::T__24)
        | (1ULL << HspmdParser::T__25)
        | (1ULL << HspmdParser::T__28)
        | (1ULL << HspmdParser::T__29)
        | (1ULL << HspmdParser::T__30)
        | (1ULL << HspmdParser::T__31)
        | (1ULL << HspmdParser::T__33)
        | (1ULL << HspmdParser::T__34)
        | (1ULL << HspmdParser::T__35)
        | (1ULL << HspmdParser::T__36)
        | (1ULL << HspmdParser::T__37)
        | (1ULL << HspmdParser::T__38)
        | (1ULL << HspmdParser::T__41)
        | (1ULL << HspmdParser::T__42)
        | (1ULL << HspmdParser::T__43)
        | (1ULL << HspmdParser::T__44)
        | (1ULL << HspmdParser::T__45)
        | (1ULL << HspmdParser::T__46)
        | (1ULL << HspmdParser::T__47)
        | (1ULL << HspmdParser::T__48)
        | (1ULL << HspmdParser::T__49)
        | (1ULL << HspmdParser::T__50)
        | (1ULL << HspmdParser::T__52)
        | (1ULL << HspmdParser::T__54)
        | (1ULL << HspmdParser::INT)
        | (1ULL << HspmdParser::FLOAT)
        | (1ULL << HspmdParser::STRING)
        | (1ULL << HspmdParser::IDENT))) != 0)) {
        setState(276);
        dynamic_cast<IndexItemContext *>(_localctx)->lo = expr(0);
      }
      setState(279);
      match(HspmdParser::T__9);
      setState(281);
      _errHandler->sync(this);

      _la = _input->LA(1);
      if ((((_la & ~ 0x3fULL) == 0) &&
        ((1ULL << _la) & ((1ULL << HspmdParser::T__3)
        | (1ULL << HspmdParser::T__11)
        | (1ULL << HspmdParser::T__19)
        | (1ULL << HspmdParser::T__24)
        | (1ULL << HspmdParser::T__25)
        | (1ULL << HspmdParser::T__28)
        | (1ULL << HspmdParser::T__29)
        | (1ULL << HspmdParser::T__30)
        | (1ULL << HspmdParser::T__31)
        | (1ULL << HspmdParser::T__33)
        | (1ULL << HspmdParser::T__34)
        | (1ULL << HspmdParser::T__35)
        | (1ULL << HspmdParser::T__36)
        | (1ULL << HspmdParser::T__37)
        | (1ULL << HspmdParser::T__38)
        | (1ULL << HspmdParser::T__41)
        | (1ULL << HspmdParser::T__42)
        | (1ULL << HspmdParser::T__43)
        | (1ULL << HspmdParser::T__44)
        | (1ULL << HspmdParser::T__45)
        | (1ULL << HspmdParser::T__46)
        | (1ULL << HspmdParser::T__47)
        | (1ULL << HspmdParser::T__48)
        | (1ULL << HspmdParser::T__49)
        | (1ULL << HspmdParser::T__50)
        | (1ULL << HspmdParser::T__52)
        | (1ULL << HspmdParser::T__54)
        | (1ULL << HspmdParser::INT)
        | (1ULL << HspmdParser::FLOAT)
        | (1ULL << HspmdParser::STRING)
        | (1ULL << HspmdParser::IDENT))) != 0)) {
        setState(280);
        dynamic_cast<IndexItemContext *>(_localctx)->hi = expr(0);
      }
      break;
    }

    }
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- ExprListContext ------------------------------------------------------------------

HspmdParser::ExprListContext::ExprListContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

std::vector<HspmdParser::ExprContext *> HspmdParser::ExprListContext::expr() {
  return getRuleContexts<HspmdParser::ExprContext>();
}

HspmdParser::ExprContext* HspmdParser::ExprListContext::expr(size_t i) {
  return getRuleContext<HspmdParser::ExprContext>(i);
}


size_t HspmdParser::ExprListContext::getRuleIndex() const {
  return HspmdParser::RuleExprList;
}


HspmdParser::ExprListContext* HspmdParser::exprList() {
  ExprListContext *_localctx = _tracker.createInstance<ExprListContext>(_ctx, getState());
  enterRule(_localctx, 38, HspmdParser::RuleExprList);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    size_t alt;
    enterOuterAlt(_localctx, 1);
    setState(285);
    expr(0);
    setState(290);
    _errHandler->sync(this);
    alt = getInterpreter<atn::ParserATNSimulator>()->adaptivePredict(_input, 28, _ctx);
    while (alt != 2 && alt != atn::ATN::INVALID_ALT_NUMBER) {
      if (alt == 1) {
        setState(286);
        match(HspmdParser::T__4);
        setState(287);
        expr(0); 
      }
      setState(292);
      _errHandler->sync(this);
      alt = getInterpreter<atn::ParserATNSimulator>()->adaptivePredict(_input, 28, _ctx);
    }
    setState(294);
    _errHandler->sync(this);

    _la = _input->LA(1);
    if (_la == HspmdParser::T__4) {
      setState(293);
      match(HspmdParser::T__4);
    }
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- CallArgsContext ------------------------------------------------------------------

HspmdParser::CallArgsContext::CallArgsContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

std::vector<HspmdParser::ArgContext *> HspmdParser::CallArgsContext::arg() {
  return getRuleContexts<HspmdParser::ArgContext>();
}

HspmdParser::ArgContext* HspmdParser::CallArgsContext::arg(size_t i) {
  return getRuleContext<HspmdParser::ArgContext>(i);
}


size_t HspmdParser::CallArgsContext::getRuleIndex() const {
  return HspmdParser::RuleCallArgs;
}


HspmdParser::CallArgsContext* HspmdParser::callArgs() {
  CallArgsContext *_localctx = _tracker.createInstance<CallArgsContext>(_ctx, getState());
  enterRule(_localctx, 40, HspmdParser::RuleCallArgs);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    size_t alt;
    enterOuterAlt(_localctx, 1);
    setState(296);
    match(HspmdParser::T__3);
    setState(308);
    _errHandler->sync(this);

    _la = _input->LA(1);
    if ((((_la & ~ 0x3fULL) == 0) &&
      ((1ULL << _la) & ((1ULL << HspmdParser::T__3)
      | (1ULL << HspmdParser::T__11)
      | (1ULL << HspmdParser::T__19)
      | (1ULL << HspmdParser::T__24)
      | (1ULL << HspmdParser::T__25)
      | (1ULL << HspmdParser::T__28)
      | (1ULL << HspmdParser::T__29)
      | (1ULL << HspmdParser::T__30)
      | (1ULL << HspmdParser::T__31)
      | (1ULL << HspmdParser::T__33)
      | (1ULL << HspmdParser::T__34)
      | (1ULL << HspmdParser::T__35)
      | (1ULL << HspmdParser::T__36)
      | (1ULL << HspmdParser::T__37)
      | (1ULL << HspmdParser::T__38)
      | (1ULL << HspmdParser::T__41)
      | (1ULL << HspmdParser::T__42)
      | (1ULL << HspmdParser::T__43)
      | (1ULL << HspmdParser::T__44)
      | (1ULL << HspmdParser::T__45)
      | (1ULL << HspmdParser::T__46)
      | (1ULL << HspmdParser::T__47)
      | (1ULL << HspmdParser::T__48)
      | (1ULL << HspmdParser::T__49)
      | (1ULL << HspmdParser::T__50)
      | (1ULL << HspmdParser::T__52)
      | (1ULL << HspmdParser::T__54)
      | (1ULL << HspmdParser::INT)
      | (1ULL << HspmdParser::FLOAT)
      | (1ULL << HspmdParser::STRING)
      | (1ULL << HspmdParser::IDENT))) != 0)) {
      setState(297);
      arg();
      setState(302);
      _errHandler->sync(this);
      alt = getInterpreter<atn::ParserATNSimulator>()->adaptivePredict(_input, 30, _ctx);
      while (alt != 2 && alt != atn::ATN::INVALID_ALT_NUMBER) {
        if (alt == 1) {
          setState(298);
          match(HspmdParser::T__4);
          setState(299);
          arg(); 
        }
        setState(304);
        _errHandler->sync(this);
        alt = getInterpreter<atn::ParserATNSimulator>()->adaptivePredict(_input, 30, _ctx);
      }
      setState(306);
      _errHandler->sync(this);

      _la = _input->LA(1);
      if (_la == HspmdParser::T__4) {
        setState(305);
        match(HspmdParser::T__4);
      }
    }
    setState(310);
    match(HspmdParser::T__5);
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- ArgContext ------------------------------------------------------------------

HspmdParser::ArgContext::ArgContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

HspmdParser::ExprContext* HspmdParser::ArgContext::expr() {
  return getRuleContext<HspmdParser::ExprContext>(0);
}

HspmdParser::IdentContext* HspmdParser::ArgContext::ident() {
  return getRuleContext<HspmdParser::IdentContext>(0);
}


size_t HspmdParser::ArgContext::getRuleIndex() const {
  return HspmdParser::RuleArg;
}


HspmdParser::ArgContext* HspmdParser::arg() {
  ArgContext *_localctx = _tracker.createInstance<ArgContext>(_ctx, getState());
  enterRule(_localctx, 42, HspmdParser::RuleArg);

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(315);
    _errHandler->sync(this);

    switch (getInterpreter<atn::ParserATNSimulator>()->adaptivePredict(_input, 33, _ctx)) {
    case 1: {
      setState(312);
      dynamic_cast<ArgContext *>(_localctx)->name = ident();
      setState(313);
      match(HspmdParser::T__8);
      break;
    }

    }
    setState(317);
    expr(0);
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- PlanDeclContext ------------------------------------------------------------------

HspmdParser::PlanDeclContext::PlanDeclContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

std::vector<HspmdParser::IdentContext *> HspmdParser::PlanDeclContext::ident() {
  return getRuleContexts<HspmdParser::IdentContext>();
}

HspmdParser::IdentContext* HspmdParser::PlanDeclContext::ident(size_t i) {
  return getRuleContext<HspmdParser::IdentContext>(i);
}

HspmdParser::CallArgsContext* HspmdParser::PlanDeclContext::callArgs() {
  return getRuleContext<HspmdParser::CallArgsContext>(0);
}

std::vector<HspmdParser::PlanItemContext *> HspmdParser::PlanDeclContext::planItem() {
  return getRuleContexts<HspmdParser::PlanItemContext>();
}

HspmdParser::PlanItemContext* HspmdParser::PlanDeclContext::planItem(size_t i) {
  return getRuleContext<HspmdParser::PlanItemContext>(i);
}


size_t HspmdParser::PlanDeclContext::getRuleIndex() const {
  return HspmdParser::RulePlanDecl;
}


HspmdParser::PlanDeclContext* HspmdParser::planDecl() {
  PlanDeclContext *_localctx = _tracker.createInstance<PlanDeclContext>(_ctx, getState());
  enterRule(_localctx, 44, HspmdParser::RulePlanDecl);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(319);
    match(HspmdParser::T__26);
    setState(320);
    dynamic_cast<PlanDeclContext *>(_localctx)->name = ident();
    setState(321);
    match(HspmdParser::T__27);
    setState(322);
    dynamic_cast<PlanDeclContext *>(_localctx)->model = ident();
    setState(324);
    _errHandler->sync(this);

    _la = _input->LA(1);
    if (_la == HspmdParser::T__3) {
      setState(323);
      callArgs();
    }
    setState(326);
    match(HspmdParser::T__6);
    setState(330);
    _errHandler->sync(this);
    _la = _input->LA(1);
    while ((((_la & ~ 0x3fULL) == 0) &&
      ((1ULL << _la) & ((1ULL << HspmdParser::T__28)
      | (1ULL << HspmdParser::T__29)
      | (1ULL << HspmdParser::T__30)
      | (1ULL << HspmdParser::T__31)
      | (1ULL << HspmdParser::T__33)
      | (1ULL << HspmdParser::T__35)
      | (1ULL << HspmdParser::T__36)
      | (1ULL << HspmdParser::T__37)
      | (1ULL << HspmdParser::T__38)
      | (1ULL << HspmdParser::T__39)
      | (1ULL << HspmdParser::T__40))) != 0)) {
      setState(327);
      planItem();
      setState(332);
      _errHandler->sync(this);
      _la = _input->LA(1);
    }
    setState(333);
    match(HspmdParser::T__7);
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- PlanItemContext ------------------------------------------------------------------

HspmdParser::PlanItemContext::PlanItemContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}


size_t HspmdParser::PlanItemContext::getRuleIndex() const {
  return HspmdParser::RulePlanItem;
}

void HspmdParser::PlanItemContext::copyFrom(PlanItemContext *ctx) {
  ParserRuleContext::copyFrom(ctx);
}

//----------------- PrecisionItemContext ------------------------------------------------------------------

HspmdParser::IdentContext* HspmdParser::PrecisionItemContext::ident() {
  return getRuleContext<HspmdParser::IdentContext>(0);
}

HspmdParser::PrecisionItemContext::PrecisionItemContext(PlanItemContext *ctx) { copyFrom(ctx); }


//----------------- ZeroItemContext ------------------------------------------------------------------

tree::TerminalNode* HspmdParser::ZeroItemContext::INT() {
  return getToken(HspmdParser::INT, 0);
}

HspmdParser::ZeroItemContext::ZeroItemContext(PlanItemContext *ctx) { copyFrom(ctx); }


//----------------- AnnotateItemContext ------------------------------------------------------------------

HspmdParser::ValuePathContext* HspmdParser::AnnotateItemContext::valuePath() {
  return getRuleContext<HspmdParser::ValuePathContext>(0);
}

HspmdParser::AnnotationContext* HspmdParser::AnnotateItemContext::annotation() {
  return getRuleContext<HspmdParser::AnnotationContext>(0);
}

HspmdParser::AnnotateItemContext::AnnotateItemContext(PlanItemContext *ctx) { copyFrom(ctx); }


//----------------- ChunkedItemContext ------------------------------------------------------------------

HspmdParser::ChunkedItemContext::ChunkedItemContext(PlanItemContext *ctx) { copyFrom(ctx); }


//----------------- BindItemContext ------------------------------------------------------------------

std::vector<HspmdParser::BindingContext *> HspmdParser::BindItemContext::binding() {
  return getRuleContexts<HspmdParser::BindingContext>();
}

HspmdParser::BindingContext* HspmdParser::BindItemContext::binding(size_t i) {
  return getRuleContext<HspmdParser::BindingContext>(i);
}

HspmdParser::BindItemContext::BindItemContext(PlanItemContext *ctx) { copyFrom(ctx); }


//----------------- OptimizerItemContext ------------------------------------------------------------------

HspmdParser::IdentContext* HspmdParser::OptimizerItemContext::ident() {
  return getRuleContext<HspmdParser::IdentContext>(0);
}

HspmdParser::CallArgsContext* HspmdParser::OptimizerItemContext::callArgs() {
  return getRuleContext<HspmdParser::CallArgsContext>(0);
}

HspmdParser::OptimizerItemContext::OptimizerItemContext(PlanItemContext *ctx) { copyFrom(ctx); }


//----------------- ScheduleItemContext ------------------------------------------------------------------

HspmdParser::IdentContext* HspmdParser::ScheduleItemContext::ident() {
  return getRuleContext<HspmdParser::IdentContext>(0);
}

HspmdParser::ScheduleItemContext::ScheduleItemContext(PlanItemContext *ctx) { copyFrom(ctx); }


//----------------- RecomputeItemContext ------------------------------------------------------------------

HspmdParser::RecomputeItemContext::RecomputeItemContext(PlanItemContext *ctx) { copyFrom(ctx); }


//----------------- ReshardItemContext ------------------------------------------------------------------

HspmdParser::ValuePathContext* HspmdParser::ReshardItemContext::valuePath() {
  return getRuleContext<HspmdParser::ValuePathContext>(0);
}

HspmdParser::AnnotationContext* HspmdParser::ReshardItemContext::annotation() {
  return getRuleContext<HspmdParser::AnnotationContext>(0);
}

HspmdParser::ReshardItemContext::ReshardItemContext(PlanItemContext *ctx) { copyFrom(ctx); }


//----------------- ClusterItemContext ------------------------------------------------------------------

tree::TerminalNode* HspmdParser::ClusterItemContext::STRING() {
  return getToken(HspmdParser::STRING, 0);
}

HspmdParser::ClusterItemContext::ClusterItemContext(PlanItemContext *ctx) { copyFrom(ctx); }


//----------------- PipelineItemContext ------------------------------------------------------------------

std::vector<HspmdParser::PipelineOptionContext *> HspmdParser::PipelineItemContext::pipelineOption() {
  return getRuleContexts<HspmdParser::PipelineOptionContext>();
}

HspmdParser::PipelineOptionContext* HspmdParser::PipelineItemContext::pipelineOption(size_t i) {
  return getRuleContext<HspmdParser::PipelineOptionContext>(i);
}

std::vector<HspmdParser::StageDeclContext *> HspmdParser::PipelineItemContext::stageDecl() {
  return getRuleContexts<HspmdParser::StageDeclContext>();
}

HspmdParser::StageDeclContext* HspmdParser::PipelineItemContext::stageDecl(size_t i) {
  return getRuleContext<HspmdParser::StageDeclContext>(i);
}

HspmdParser::IdentContext* HspmdParser::PipelineItemContext::ident() {
  return getRuleContext<HspmdParser::IdentContext>(0);
}

HspmdParser::PipelineItemContext::PipelineItemContext(PlanItemContext *ctx) { copyFrom(ctx); }


HspmdParser::PlanItemContext* HspmdParser::planItem() {
  PlanItemContext *_localctx = _tracker.createInstance<PlanItemContext>(_ctx, getState());
  enterRule(_localctx, 46, HspmdParser::RulePlanItem);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    setState(393);
    _errHandler->sync(this);
    switch (_input->LA(1)) {
      case HspmdParser::T__28: {
        _localctx = dynamic_cast<PlanItemContext *>(_tracker.createInstance<HspmdParser::ClusterItemContext>(_localctx));
        enterOuterAlt(_localctx, 1);
        setState(335);
        match(HspmdParser::T__28);
        setState(336);
        match(HspmdParser::STRING);
        break;
      }

      case HspmdParser::T__29: {
        _localctx = dynamic_cast<PlanItemContext *>(_tracker.createInstance<HspmdParser::BindItemContext>(_localctx));
        enterOuterAlt(_localctx, 2);
        setState(337);
        match(HspmdParser::T__29);
        setState(338);
        binding();
        setState(343);
        _errHandler->sync(this);
        _la = _input->LA(1);
        while (_la == HspmdParser::T__4) {
          setState(339);
          match(HspmdParser::T__4);
          setState(340);
          binding();
          setState(345);
          _errHandler->sync(this);
          _la = _input->LA(1);
        }
        break;
      }

      case HspmdParser::T__30: {
        _localctx = dynamic_cast<PlanItemContext *>(_tracker.createInstance<HspmdParser::OptimizerItemContext>(_localctx));
        enterOuterAlt(_localctx, 3);
        setState(346);
        match(HspmdParser::T__30);
        setState(347);
        dynamic_cast<OptimizerItemContext *>(_localctx)->name = ident();
        setState(349);
        _errHandler->sync(this);

        _la = _input->LA(1);
        if (_la == HspmdParser::T__3) {
          setState(348);
          callArgs();
        }
        break;
      }

      case HspmdParser::T__31: {
        _localctx = dynamic_cast<PlanItemContext *>(_tracker.createInstance<HspmdParser::ScheduleItemContext>(_localctx));
        enterOuterAlt(_localctx, 4);
        setState(351);
        match(HspmdParser::T__31);
        setState(354);
        _errHandler->sync(this);
        switch (_input->LA(1)) {
          case HspmdParser::T__28:
          case HspmdParser::T__29:
          case HspmdParser::T__30:
          case HspmdParser::T__31:
          case HspmdParser::T__33:
          case HspmdParser::T__34:
          case HspmdParser::T__35:
          case HspmdParser::T__36:
          case HspmdParser::T__37:
          case HspmdParser::T__38:
          case HspmdParser::T__41:
          case HspmdParser::T__42:
          case HspmdParser::T__43:
          case HspmdParser::T__44:
          case HspmdParser::T__45:
          case HspmdParser::T__46:
          case HspmdParser::T__47:
          case HspmdParser::T__48:
          case HspmdParser::T__49:
          case HspmdParser::T__50:
          case HspmdParser::T__52:
          case HspmdParser::T__54:
          case HspmdParser::IDENT: {
            setState(352);
            ident();
            break;
          }

          case HspmdParser::T__32: {
            setState(353);
            match(HspmdParser::T__32);
            break;
          }

        default:
          throw NoViableAltException(this);
        }
        break;
      }

      case HspmdParser::T__33: {
        _localctx = dynamic_cast<PlanItemContext *>(_tracker.createInstance<HspmdParser::ZeroItemContext>(_localctx));
        enterOuterAlt(_localctx, 5);
        setState(356);
        match(HspmdParser::T__33);
        setState(359);
        _errHandler->sync(this);

        _la = _input->LA(1);
        if (_la == HspmdParser::T__34) {
          setState(357);
          match(HspmdParser::T__34);
          setState(358);
          dynamic_cast<ZeroItemContext *>(_localctx)->replicas = match(HspmdParser::INT);
        }
        break;
      }

      case HspmdParser::T__35: {
        _localctx = dynamic_cast<PlanItemContext *>(_tracker.createInstance<HspmdParser::RecomputeItemContext>(_localctx));
        enterOuterAlt(_localctx, 6);
        setState(361);
        match(HspmdParser::T__35);
        break;
      }

      case HspmdParser::T__36: {
        _localctx = dynamic_cast<PlanItemContext *>(_tracker.createInstance<HspmdParser::ChunkedItemContext>(_localctx));
        enterOuterAlt(_localctx, 7);
        setState(362);
        match(HspmdParser::T__36);
        break;
      }

      case HspmdParser::T__37: {
        _localctx = dynamic_cast<PlanItemContext *>(_tracker.createInstance<HspmdParser::PrecisionItemContext>(_localctx));
        enterOuterAlt(_localctx, 8);
        setState(363);
        match(HspmdParser::T__37);
        setState(364);
        ident();
        break;
      }

      case HspmdParser::T__38: {
        _localctx = dynamic_cast<PlanItemContext *>(_tracker.createInstance<HspmdParser::PipelineItemContext>(_localctx));
        enterOuterAlt(_localctx, 9);
        setState(365);
        match(HspmdParser::T__38);
        setState(367);
        _errHandler->sync(this);

        switch (getInterpreter<atn::ParserATNSimulator>()->adaptivePredict(_input, 40, _ctx)) {
        case 1: {
          setState(366);
          dynamic_cast<PipelineItemContext *>(_localctx)->name = ident();
          break;
        }

        }
        setState(372);
        _errHandler->sync(this);
        _la = _input->LA(1);
        while (_la == HspmdParser::T__42

        || _la == HspmdParser::T__43) {
          setState(369);
          pipelineOption();
          setState(374);
          _errHandler->sync(this);
          _la = _input->LA(1);
        }
        setState(375);
        match(HspmdParser::T__6);
        setState(379);
        _errHandler->sync(this);
        _la = _input->LA(1);
        while (_la == HspmdParser::T__44) {
          setState(376);
          stageDecl();
          setState(381);
          _errHandler->sync(this);
          _la = _input->LA(1);
        }
        setState(382);
        match(HspmdParser::T__7);
        break;
      }

      case HspmdParser::T__39: {
        _localctx = dynamic_cast<PlanItemContext *>(_tracker.createInstance<HspmdParser::AnnotateItemContext>(_localctx));
        enterOuterAlt(_localctx, 10);
        setState(383);
        match(HspmdParser::T__39);
        setState(384);
        valuePath();
        setState(385);
        match(HspmdParser::T__8);
        setState(386);
        annotation();
        break;
      }

      case HspmdParser::T__40: {
        _localctx = dynamic_cast<PlanItemContext *>(_tracker.createInstance<HspmdParser::ReshardItemContext>(_localctx));
        enterOuterAlt(_localctx, 11);
        setState(388);
        match(HspmdParser::T__40);
        setState(389);
        valuePath();
        setState(390);
        match(HspmdParser::T__41);
        setState(391);
        annotation();
        break;
      }

    default:
      throw NoViableAltException(this);
    }
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- BindingContext ------------------------------------------------------------------

HspmdParser::BindingContext::BindingContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

HspmdParser::ExprContext* HspmdParser::BindingContext::expr() {
  return getRuleContext<HspmdParser::ExprContext>(0);
}

HspmdParser::IdentContext* HspmdParser::BindingContext::ident() {
  return getRuleContext<HspmdParser::IdentContext>(0);
}


size_t HspmdParser::BindingContext::getRuleIndex() const {
  return HspmdParser::RuleBinding;
}


HspmdParser::BindingContext* HspmdParser::binding() {
  BindingContext *_localctx = _tracker.createInstance<BindingContext>(_ctx, getState());
  enterRule(_localctx, 48, HspmdParser::RuleBinding);

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(395);
    dynamic_cast<BindingContext *>(_localctx)->name = ident();
    setState(396);
    match(HspmdParser::T__8);
    setState(397);
    expr(0);
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- PipelineOptionContext ------------------------------------------------------------------

HspmdParser::PipelineOptionContext::PipelineOptionContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

HspmdParser::ExprContext* HspmdParser::PipelineOptionContext::expr() {
  return getRuleContext<HspmdParser::ExprContext>(0);
}


size_t HspmdParser::PipelineOptionContext::getRuleIndex() const {
  return HspmdParser::RulePipelineOption;
}


HspmdParser::PipelineOptionContext* HspmdParser::pipelineOption() {
  PipelineOptionContext *_localctx = _tracker.createInstance<PipelineOptionContext>(_ctx, getState());
  enterRule(_localctx, 50, HspmdParser::RulePipelineOption);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(399);
    dynamic_cast<PipelineOptionContext *>(_localctx)->key = _input->LT(1);
    _la = _input->LA(1);
    if (!(_la == HspmdParser::T__42

    || _la == HspmdParser::T__43)) {
      dynamic_cast<PipelineOptionContext *>(_localctx)->key = _errHandler->recoverInline(this);
    }
    else {
      _errHandler->reportMatch(this);
      consume();
    }
    setState(400);
    expr(0);
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- StageDeclContext ------------------------------------------------------------------

HspmdParser::StageDeclContext::StageDeclContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

std::vector<HspmdParser::StageClauseContext *> HspmdParser::StageDeclContext::stageClause() {
  return getRuleContexts<HspmdParser::StageClauseContext>();
}

HspmdParser::StageClauseContext* HspmdParser::StageDeclContext::stageClause(size_t i) {
  return getRuleContext<HspmdParser::StageClauseContext>(i);
}


size_t HspmdParser::StageDeclContext::getRuleIndex() const {
  return HspmdParser::RuleStageDecl;
}


HspmdParser::StageDeclContext* HspmdParser::stageDecl() {
  StageDeclContext *_localctx = _tracker.createInstance<StageDeclContext>(_ctx, getState());
  enterRule(_localctx, 52, HspmdParser::RuleStageDecl);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(402);
    match(HspmdParser::T__44);
    setState(406);
    _errHandler->sync(this);
    _la = _input->LA(1);
    while ((((_la & ~ 0x3fULL) == 0) &&
      ((1ULL << _la) & ((1ULL << HspmdParser::T__33)
      | (1ULL << HspmdParser::T__35)
      | (1ULL << HspmdParser::T__45)
      | (1ULL << HspmdParser::T__46)
      | (1ULL << HspmdParser::T__47)
      | (1ULL << HspmdParser::T__48)
      | (1ULL << HspmdParser::T__49)
      | (1ULL << HspmdParser::T__50))) != 0)) {
      setState(403);
      stageClause();
      setState(408);
      _errHandler->sync(this);
      _la = _input->LA(1);
    }
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- StageClauseContext ------------------------------------------------------------------

HspmdParser::StageClauseContext::StageClauseContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}


size_t HspmdParser::StageClauseContext::getRuleIndex() const {
  return HspmdParser::RuleStageClause;
}

void HspmdParser::StageClauseContext::copyFrom(StageClauseContext *ctx) {
  ParserRuleContext::copyFrom(ctx);
}

//----------------- DevicesClauseContext ------------------------------------------------------------------

HspmdParser::DeviceListContext* HspmdParser::DevicesClauseContext::deviceList() {
  return getRuleContext<HspmdParser::DeviceListContext>(0);
}

HspmdParser::DevicesClauseContext::DevicesClauseContext(StageClauseContext *ctx) { copyFrom(ctx); }


//----------------- LayersClauseContext ------------------------------------------------------------------

HspmdParser::ValuePathContext* HspmdParser::LayersClauseContext::valuePath() {
  return getRuleContext<HspmdParser::ValuePathContext>(0);
}

HspmdParser::LayersClauseContext::LayersClauseContext(StageClauseContext *ctx) { copyFrom(ctx); }


//----------------- WithClauseContext ------------------------------------------------------------------

std::vector<HspmdParser::ValuePathContext *> HspmdParser::WithClauseContext::valuePath() {
  return getRuleContexts<HspmdParser::ValuePathContext>();
}

HspmdParser::ValuePathContext* HspmdParser::WithClauseContext::valuePath(size_t i) {
  return getRuleContext<HspmdParser::ValuePathContext>(i);
}

HspmdParser::WithClauseContext::WithClauseContext(StageClauseContext *ctx) { copyFrom(ctx); }


//----------------- StageZeroClauseContext ------------------------------------------------------------------

tree::TerminalNode* HspmdParser::StageZeroClauseContext::INT() {
  return getToken(HspmdParser::INT, 0);
}

HspmdParser::StageZeroClauseContext::StageZeroClauseContext(StageClauseContext *ctx) { copyFrom(ctx); }


//----------------- TpClauseContext ------------------------------------------------------------------

tree::TerminalNode* HspmdParser::TpClauseContext::INT() {
  return getToken(HspmdParser::INT, 0);
}

HspmdParser::TpClauseContext::TpClauseContext(StageClauseContext *ctx) { copyFrom(ctx); }


//----------------- StageRecomputeClauseContext ------------------------------------------------------------------

HspmdParser::StageRecomputeClauseContext::StageRecomputeClauseContext(StageClauseContext *ctx) { copyFrom(ctx); }


//----------------- ShareClauseContext ------------------------------------------------------------------

std::vector<HspmdParser::ShareEntryContext *> HspmdParser::ShareClauseContext::shareEntry() {
  return getRuleContexts<HspmdParser::ShareEntryContext>();
}

HspmdParser::ShareEntryContext* HspmdParser::ShareClauseContext::shareEntry(size_t i) {
  return getRuleContext<HspmdParser::ShareEntryContext>(i);
}

HspmdParser::ShareClauseContext::ShareClauseContext(StageClauseContext *ctx) { copyFrom(ctx); }


HspmdParser::StageClauseContext* HspmdParser::stageClause() {
  StageClauseContext *_localctx = _tracker.createInstance<StageClauseContext>(_ctx, getState());
  enterRule(_localctx, 54, HspmdParser::RuleStageClause);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    setState(442);
    _errHandler->sync(this);
    switch (_input->LA(1)) {
      case HspmdParser::T__45: {
        _localctx = dynamic_cast<StageClauseContext *>(_tracker.createInstance<HspmdParser::DevicesClauseContext>(_localctx));
        enterOuterAlt(_localctx, 1);
        setState(409);
        match(HspmdParser::T__45);
        setState(410);
        deviceList();
        break;
      }

      case HspmdParser::T__46: {
        _localctx = dynamic_cast<StageClauseContext *>(_tracker.createInstance<HspmdParser::TpClauseContext>(_localctx));
        enterOuterAlt(_localctx, 2);
        setState(411);
        match(HspmdParser::T__46);
        setState(412);
        match(HspmdParser::INT);
        break;
      }

      case HspmdParser::T__47:
      case HspmdParser::T__48: {
        _localctx = dynamic_cast<StageClauseContext *>(_tracker.createInstance<HspmdParser::ShareClauseContext>(_localctx));
        enterOuterAlt(_localctx, 3);
        setState(413);
        dynamic_cast<ShareClauseContext *>(_localctx)->key = _input->LT(1);
        _la = _input->LA(1);
        if (!(_la == HspmdParser::T__47

        || _la == HspmdParser::T__48)) {
          dynamic_cast<ShareClauseContext *>(_localctx)->key = _errHandler->recoverInline(this);
        }
        else {
          _errHandler->reportMatch(this);
          consume();
        }
        setState(414);
        match(HspmdParser::T__11);
        setState(415);
        shareEntry();
        setState(420);
        _errHandler->sync(this);
        _la = _input->LA(1);
        while (_la == HspmdParser::T__4) {
          setState(416);
          match(HspmdParser::T__4);
          setState(417);
          shareEntry();
          setState(422);
          _errHandler->sync(this);
          _la = _input->LA(1);
        }
        setState(423);
        match(HspmdParser::T__12);
        break;
      }

      case HspmdParser::T__49: {
        _localctx = dynamic_cast<StageClauseContext *>(_tracker.createInstance<HspmdParser::LayersClauseContext>(_localctx));
        enterOuterAlt(_localctx, 4);
        setState(425);
        match(HspmdParser::T__49);
        setState(426);
        valuePath();
        break;
      }

      case HspmdParser::T__50: {
        _localctx = dynamic_cast<StageClauseContext *>(_tracker.createInstance<HspmdParser::WithClauseContext>(_localctx));
        enterOuterAlt(_localctx, 5);
        setState(427);
        match(HspmdParser::T__50);
        setState(428);
        valuePath();
        setState(433);
        _errHandler->sync(this);
        _la = _input->LA(1);
        while (_la == HspmdParser::T__4) {
          setState(429);
          match(HspmdParser::T__4);
          setState(430);
          valuePath();
          setState(435);
          _errHandler->sync(this);
          _la = _input->LA(1);
        }
        break;
      }

      case HspmdParser::T__33: {
        _localctx = dynamic_cast<StageClauseContext *>(_tracker.createInstance<HspmdParser::StageZeroClauseContext>(_localctx));
        enterOuterAlt(_localctx, 6);
        setState(436);
        match(HspmdParser::T__33);
        setState(439);
        _errHandler->sync(this);

        _la = _input->LA(1);
        if (_la == HspmdParser::T__34) {
          setState(437);
          match(HspmdParser::T__34);
          setState(438);
          dynamic_cast<StageZeroClauseContext *>(_localctx)->replicas = match(HspmdParser::INT);
        }
        break;
      }

      case HspmdParser::T__35: {
        _localctx = dynamic_cast<StageClauseContext *>(_tracker.createInstance<HspmdParser::StageRecomputeClauseContext>(_localctx));
        enterOuterAlt(_localctx, 7);
        setState(441);
        match(HspmdParser::T__35);
        break;
      }

    default:
      throw NoViableAltException(this);
    }
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- ShareEntryContext ------------------------------------------------------------------

HspmdParser::ShareEntryContext::ShareEntryContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

std::vector<tree::TerminalNode *> HspmdParser::ShareEntryContext::INT() {
  return getTokens(HspmdParser::INT);
}

tree::TerminalNode* HspmdParser::ShareEntryContext::INT(size_t i) {
  return getToken(HspmdParser::INT, i);
}

HspmdParser::DeviceListContext* HspmdParser::ShareEntryContext::deviceList() {
  return getRuleContext<HspmdParser::DeviceListContext>(0);
}


size_t HspmdParser::ShareEntryContext::getRuleIndex() const {
  return HspmdParser::RuleShareEntry;
}


HspmdParser::ShareEntryContext* HspmdParser::shareEntry() {
  ShareEntryContext *_localctx = _tracker.createInstance<ShareEntryContext>(_ctx, getState());
  enterRule(_localctx, 56, HspmdParser::RuleShareEntry);

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(446);
    _errHandler->sync(this);
    switch (_input->LA(1)) {
      case HspmdParser::INT: {
        setState(444);
        match(HspmdParser::INT);
        break;
      }

      case HspmdParser::T__11: {
        setState(445);
        deviceList();
        break;
      }

    default:
      throw NoViableAltException(this);
    }
    setState(448);
    match(HspmdParser::T__9);
    setState(449);
    match(HspmdParser::INT);
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- ValuePathContext ------------------------------------------------------------------

HspmdParser::ValuePathContext::ValuePathContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

std::vector<HspmdParser::PathSegmentContext *> HspmdParser::ValuePathContext::pathSegment() {
  return getRuleContexts<HspmdParser::PathSegmentContext>();
}

HspmdParser::PathSegmentContext* HspmdParser::ValuePathContext::pathSegment(size_t i) {
  return getRuleContext<HspmdParser::PathSegmentContext>(i);
}


size_t HspmdParser::ValuePathContext::getRuleIndex() const {
  return HspmdParser::RuleValuePath;
}


HspmdParser::ValuePathContext* HspmdParser::valuePath() {
  ValuePathContext *_localctx = _tracker.createInstance<ValuePathContext>(_ctx, getState());
  enterRule(_localctx, 58, HspmdParser::RuleValuePath);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(451);
    pathSegment();
    setState(456);
    _errHandler->sync(this);
    _la = _input->LA(1);
    while (_la == HspmdParser::T__18) {
      setState(452);
      match(HspmdParser::T__18);
      setState(453);
      pathSegment();
      setState(458);
      _errHandler->sync(this);
      _la = _input->LA(1);
    }
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- PathSegmentContext ------------------------------------------------------------------

HspmdParser::PathSegmentContext::PathSegmentContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

HspmdParser::IdentContext* HspmdParser::PathSegmentContext::ident() {
  return getRuleContext<HspmdParser::IdentContext>(0);
}

HspmdParser::PathIndexContext* HspmdParser::PathSegmentContext::pathIndex() {
  return getRuleContext<HspmdParser::PathIndexContext>(0);
}


size_t HspmdParser::PathSegmentContext::getRuleIndex() const {
  return HspmdParser::RulePathSegment;
}


HspmdParser::PathSegmentContext* HspmdParser::pathSegment() {
  PathSegmentContext *_localctx = _tracker.createInstance<PathSegmentContext>(_ctx, getState());
  enterRule(_localctx, 60, HspmdParser::RulePathSegment);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(459);
    ident();
    setState(464);
    _errHandler->sync(this);

    _la = _input->LA(1);
    if (_la == HspmdParser::T__11) {
      setState(460);
      match(HspmdParser::T__11);
      setState(461);
      pathIndex();
      setState(462);
      match(HspmdParser::T__12);
    }
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- PathIndexContext ------------------------------------------------------------------

HspmdParser::PathIndexContext::PathIndexContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

std::vector<tree::TerminalNode *> HspmdParser::PathIndexContext::INT() {
  return getTokens(HspmdParser::INT);
}

tree::TerminalNode* HspmdParser::PathIndexContext::INT(size_t i) {
  return getToken(HspmdParser::INT, i);
}


size_t HspmdParser::PathIndexContext::getRuleIndex() const {
  return HspmdParser::RulePathIndex;
}


HspmdParser::PathIndexContext* HspmdParser::pathIndex() {
  PathIndexContext *_localctx = _tracker.createInstance<PathIndexContext>(_ctx, getState());
  enterRule(_localctx, 62, HspmdParser::RulePathIndex);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    setState(475);
    _errHandler->sync(this);
    switch (getInterpreter<atn::ParserATNSimulator>()->adaptivePredict(_input, 54, _ctx)) {
    case 1: {
      enterOuterAlt(_localctx, 1);
      setState(466);
      match(HspmdParser::INT);
      break;
    }

    case 2: {
      enterOuterAlt(_localctx, 2);
      setState(467);
      match(HspmdParser::T__13);
      break;
    }

    case 3: {
      enterOuterAlt(_localctx, 3);
      setState(469);
      _errHandler->sync(this);

      _la = _input->LA(1);
      if (_la == HspmdParser::INT) {
        setState(468);
        dynamic_cast<PathIndexContext *>(_localctx)->lo = match(HspmdParser::INT);
      }
      setState(471);
      match(HspmdParser::T__9);
      setState(473);
      _errHandler->sync(this);

      _la = _input->LA(1);
      if (_la == HspmdParser::INT) {
        setState(472);
        dynamic_cast<PathIndexContext *>(_localctx)->hi = match(HspmdParser::INT);
      }
      break;
    }

    }
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- AnnotationContext ------------------------------------------------------------------

HspmdParser::AnnotationContext::AnnotationContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

std::vector<HspmdParser::LocalAnnotationContext *> HspmdParser::AnnotationContext::localAnnotation() {
  return getRuleContexts<HspmdParser::LocalAnnotationContext>();
}

HspmdParser::LocalAnnotationContext* HspmdParser::AnnotationContext::localAnnotation(size_t i) {
  return getRuleContext<HspmdParser::LocalAnnotationContext>(i);
}

HspmdParser::HeteroContext* HspmdParser::AnnotationContext::hetero() {
  return getRuleContext<HspmdParser::HeteroContext>(0);
}


size_t HspmdParser::AnnotationContext::getRuleIndex() const {
  return HspmdParser::RuleAnnotation;
}


HspmdParser::AnnotationContext* HspmdParser::annotation() {
  AnnotationContext *_localctx = _tracker.createInstance<AnnotationContext>(_ctx, getState());
  enterRule(_localctx, 64, HspmdParser::RuleAnnotation);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    setState(490);
    _errHandler->sync(this);
    switch (_input->LA(1)) {
      case HspmdParser::T__11: {
        enterOuterAlt(_localctx, 1);
        setState(477);
        localAnnotation();
        break;
      }

      case HspmdParser::T__6: {
        enterOuterAlt(_localctx, 2);
        setState(478);
        match(HspmdParser::T__6);
        setState(479);
        localAnnotation();
        setState(484);
        _errHandler->sync(this);
        _la = _input->LA(1);
        while (_la == HspmdParser::T__51) {
          setState(480);
          match(HspmdParser::T__51);
          setState(481);
          localAnnotation();
          setState(486);
          _errHandler->sync(this);
          _la = _input->LA(1);
        }
        setState(487);
        match(HspmdParser::T__7);
        setState(488);
        hetero();
        break;
      }

    default:
      throw NoViableAltException(this);
    }
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- LocalAnnotationContext ------------------------------------------------------------------

HspmdParser::LocalAnnotationContext::LocalAnnotationContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

HspmdParser::DeviceListContext* HspmdParser::LocalAnnotationContext::deviceList() {
  return getRuleContext<HspmdParser::DeviceListContext>(0);
}

std::vector<HspmdParser::MeshAxisContext *> HspmdParser::LocalAnnotationContext::meshAxis() {
  return getRuleContexts<HspmdParser::MeshAxisContext>();
}

HspmdParser::MeshAxisContext* HspmdParser::LocalAnnotationContext::meshAxis(size_t i) {
  return getRuleContext<HspmdParser::MeshAxisContext>(i);
}


size_t HspmdParser::LocalAnnotationContext::getRuleIndex() const {
  return HspmdParser::RuleLocalAnnotation;
}


HspmdParser::LocalAnnotationContext* HspmdParser::localAnnotation() {
  LocalAnnotationContext *_localctx = _tracker.createInstance<LocalAnnotationContext>(_ctx, getState());
  enterRule(_localctx, 66, HspmdParser::RuleLocalAnnotation);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(492);
    deviceList();
    setState(493);
    match(HspmdParser::T__9);
    setState(494);
    meshAxis();
    setState(499);
    _errHandler->sync(this);
    _la = _input->LA(1);
    while (_la == HspmdParser::T__52) {
      setState(495);
      match(HspmdParser::T__52);
      setState(496);
      meshAxis();
      setState(501);
      _errHandler->sync(this);
      _la = _input->LA(1);
    }
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- DeviceListContext ------------------------------------------------------------------

HspmdParser::DeviceListContext::DeviceListContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

std::vector<HspmdParser::DeviceItemContext *> HspmdParser::DeviceListContext::deviceItem() {
  return getRuleContexts<HspmdParser::DeviceItemContext>();
}

HspmdParser::DeviceItemContext* HspmdParser::DeviceListContext::deviceItem(size_t i) {
  return getRuleContext<HspmdParser::DeviceItemContext>(i);
}


size_t HspmdParser::DeviceListContext::getRuleIndex() const {
  return HspmdParser::RuleDeviceList;
}


HspmdParser::DeviceListContext* HspmdParser::deviceList() {
  DeviceListContext *_localctx = _tracker.createInstance<DeviceListContext>(_ctx, getState());
  enterRule(_localctx, 68, HspmdParser::RuleDeviceList);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(502);
    match(HspmdParser::T__11);
    setState(503);
    deviceItem();
    setState(508);
    _errHandler->sync(this);
    _la = _input->LA(1);
    while (_la == HspmdParser::T__4) {
      setState(504);
      match(HspmdParser::T__4);
      setState(505);
      deviceItem();
      setState(510);
      _errHandler->sync(this);
      _la = _input->LA(1);
    }
    setState(511);
    match(HspmdParser::T__12);
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- DeviceItemContext ------------------------------------------------------------------

HspmdParser::DeviceItemContext::DeviceItemContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

std::vector<tree::TerminalNode *> HspmdParser::DeviceItemContext::INT() {
  return getTokens(HspmdParser::INT);
}

tree::TerminalNode* HspmdParser::DeviceItemContext::INT(size_t i) {
  return getToken(HspmdParser::INT, i);
}


size_t HspmdParser::DeviceItemContext::getRuleIndex() const {
  return HspmdParser::RuleDeviceItem;
}


HspmdParser::DeviceItemContext* HspmdParser::deviceItem() {
  DeviceItemContext *_localctx = _tracker.createInstance<DeviceItemContext>(_ctx, getState());
  enterRule(_localctx, 70, HspmdParser::RuleDeviceItem);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(513);
    dynamic_cast<DeviceItemContext *>(_localctx)->lo = match(HspmdParser::INT);
    setState(516);
    _errHandler->sync(this);

    _la = _input->LA(1);
    if (_la == HspmdParser::T__53) {
      setState(514);
      match(HspmdParser::T__53);
      setState(515);
      dynamic_cast<DeviceItemContext *>(_localctx)->hi = match(HspmdParser::INT);
    }
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- MeshAxisContext ------------------------------------------------------------------

HspmdParser::MeshAxisContext::MeshAxisContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

HspmdParser::IdentContext* HspmdParser::MeshAxisContext::ident() {
  return getRuleContext<HspmdParser::IdentContext>(0);
}

tree::TerminalNode* HspmdParser::MeshAxisContext::INT() {
  return getToken(HspmdParser::INT, 0);
}


size_t HspmdParser::MeshAxisContext::getRuleIndex() const {
  return HspmdParser::RuleMeshAxis;
}


HspmdParser::MeshAxisContext* HspmdParser::meshAxis() {
  MeshAxisContext *_localctx = _tracker.createInstance<MeshAxisContext>(_ctx, getState());
  enterRule(_localctx, 72, HspmdParser::RuleMeshAxis);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(518);
    ident();
    setState(521);
    _errHandler->sync(this);

    _la = _input->LA(1);
    if (_la == HspmdParser::T__13) {
      setState(519);
      match(HspmdParser::T__13);
      setState(520);
      match(HspmdParser::INT);
    }
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- HeteroContext ------------------------------------------------------------------

HspmdParser::HeteroContext::HeteroContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

HspmdParser::IdentContext* HspmdParser::HeteroContext::ident() {
  return getRuleContext<HspmdParser::IdentContext>(0);
}

std::vector<tree::TerminalNode *> HspmdParser::HeteroContext::INT() {
  return getTokens(HspmdParser::INT);
}

tree::TerminalNode* HspmdParser::HeteroContext::INT(size_t i) {
  return getToken(HspmdParser::INT, i);
}


size_t HspmdParser::HeteroContext::getRuleIndex() const {
  return HspmdParser::RuleHetero;
}


HspmdParser::HeteroContext* HspmdParser::hetero() {
  HeteroContext *_localctx = _tracker.createInstance<HeteroContext>(_ctx, getState());
  enterRule(_localctx, 74, HspmdParser::RuleHetero);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(523);
    ident();
    setState(537);
    _errHandler->sync(this);

    _la = _input->LA(1);
    if (_la == HspmdParser::T__11

    || _la == HspmdParser::T__54) {
      setState(525);
      _errHandler->sync(this);

      _la = _input->LA(1);
      if (_la == HspmdParser::T__54) {
        setState(524);
        match(HspmdParser::T__54);
      }
      setState(527);
      match(HspmdParser::T__11);
      setState(528);
      match(HspmdParser::INT);
      setState(533);
      _errHandler->sync(this);
      _la = _input->LA(1);
      while (_la == HspmdParser::T__4) {
        setState(529);
        match(HspmdParser::T__4);
        setState(530);
        match(HspmdParser::INT);
        setState(535);
        _errHandler->sync(this);
        _la = _input->LA(1);
      }
      setState(536);
      match(HspmdParser::T__12);
    }
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

//----------------- IdentContext ------------------------------------------------------------------

HspmdParser::IdentContext::IdentContext(ParserRuleContext *parent, size_t invokingState)
  : ParserRuleContext(parent, invokingState) {
}

tree::TerminalNode* HspmdParser::IdentContext::IDENT() {
  return getToken(HspmdParser::IDENT, 0);
}


size_t HspmdParser::IdentContext::getRuleIndex() const {
  return HspmdParser::RuleIdent;
}


HspmdParser::IdentContext* HspmdParser::ident() {
  IdentContext *_localctx = _tracker.createInstance<IdentContext>(_ctx, getState());
  enterRule(_localctx, 76, HspmdParser::RuleIdent);
  size_t _la = 0;

  auto onExit = finally([=] {
    exitRule();
  });
  try {
    enterOuterAlt(_localctx, 1);
    setState(539);
    _la = _input->LA(1);
    if (!((((_la & ~ 0x3fULL) == 0) &&
      ((1ULL << _la) & ((1ULL << HspmdParser::T__28)
      | (1ULL << HspmdParser::T__29)
      | (1ULL << HspmdParser::T__30)
      | (1ULL << HspmdParser::T__31)
      | (1ULL << HspmdParser::T__33)
      | (1ULL << HspmdParser::T__34)
      | (1ULL << HspmdParser::T__35)
      | (1ULL << HspmdParser::T__36)
      | (1ULL << HspmdParser::T__37)
      | (1ULL << HspmdParser::T__38)
      | (1ULL << HspmdParser::T__41)
      | (1ULL << HspmdParser::T__42)
      | (1ULL << HspmdParser::T__43)
      | (1ULL << HspmdParser::T__44)
      | (1ULL << HspmdParser::T__45)
      | (1ULL << HspmdParser::T__46)
      | (1ULL << HspmdParser::T__47)
      | (1ULL << HspmdParser::T__48)
      | (1ULL << HspmdParser::T__49)
      | (1ULL << HspmdParser::T__50)
      | (1ULL << HspmdParser::T__52)
      | (1ULL << HspmdParser::T__54)
      | (1ULL << HspmdParser::IDENT))) != 0))) {
    _errHandler->recoverInline(this);
    }
    else {
      _errHandler->reportMatch(this);
      consume();
    }
   
  }
  catch (RecognitionException &e) {
    _errHandler->reportError(this, e);
    _localctx->exception = std::current_exception();
    _errHandler->recover(this, _localctx->exception);
  }

  return _localctx;
}

bool HspmdParser::sempred(RuleContext *context, size_t ruleIndex, size_t predicateIndex) {
  switch (ruleIndex) {
    case 17: return exprSempred(dynamic_cast<ExprContext *>(context), predicateIndex);

  default:
    break;
  }
  return true;
}

bool HspmdParser::exprSempred(ExprContext *_localctx, size_t predicateIndex) {
  switch (predicateIndex) {
    case 0: return precpred(_ctx, 9);
    case 1: return precpred(_ctx, 8);
    case 2: return precpred(_ctx, 13);
    case 3: return precpred(_ctx, 12);
    case 4: return precpred(_ctx, 11);

  default:
    break;
  }
  return true;
}

// Static vars and initialization.
std::vector<dfa::DFA> HspmdParser::_decisionToDFA;
atn::PredictionContextCache HspmdParser::_sharedContextCache;

// We own the ATN which in turn owns the ATN states.
atn::ATN HspmdParser::_atn;
std::vector<uint16_t> HspmdParser::_serializedATN;

std::vector<std::string> HspmdParser::_ruleNames = {
  "file", "importDecl", "topDecl", "moduleDecl", "aliasDecl", "moduleParam", 
  "memberDecl", "paramDecl", "sublayerDecl", "constDecl", "fnDecl", "fnParam", 
  "typeExpr", "block", "stmt", "letStmt", "returnStmt", "expr", "indexItem", 
  "exprList", "callArgs", "arg", "planDecl", "planItem", "binding", "pipelineOption", 
  "stageDecl", "stageClause", "shareEntry", "valuePath", "pathSegment", 
  "pathIndex", "annotation", "localAnnotation", "deviceList", "deviceItem", 
  "meshAxis", "hetero", "ident"
};

std::vector<std::string> HspmdParser::_literalNames = {
  "", "'import'", "'layer'", "'model'", "'('", "','", "')'", "'{'", "'}'", 
  "'='", "':'", "'param'", "'['", "']'", "'*'", "'let'", "'fn'", "'->'", 
  "'return'", "'.'", "'-'", "'/'", "'@'", "'%'", "'+'", "'true'", "'false'", 
  "'plan'", "'for'", "'cluster'", "'bind'", "'optimizer'", "'schedule'", 
  "'1f1b'", "'zero'", "'replicas'", "'recompute'", "'chunked'", "'precision'", 
  "'pipeline'", "'annotate'", "'reshard'", "'to'", "'share'", "'microbatches'", 
  "'stage'", "'devices'", "'tp'", "'cp'", "'hp'", "'layers'", "'with'", 
  "'|'", "'x'", "'..'", "'ratio'"
};

std::vector<std::string> HspmdParser::_symbolicNames = {
  "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", 
  "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", 
  "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", 
  "", "", "INT", "FLOAT", "STRING", "IDENT", "LINE_COMMENT", "BLOCK_COMMENT", 
  "WS"
};

dfa::Vocabulary HspmdParser::_vocabulary(_literalNames, _symbolicNames);

std::vector<std::string> HspmdParser::_tokenNames;

HspmdParser::Initializer::Initializer() {
	for (size_t i = 0; i < _symbolicNames.size(); ++i) {
		std::string name = _vocabulary.getLiteralName(i);
		if (name.empty()) {
			name = _vocabulary.getSymbolicName(i);
		}

		if (name.empty()) {
			_tokenNames.push_back("<INVALID>");
		} else {
      _tokenNames.push_back(name);
    }
	}

  _serializedATN = {
    0x3, 0x608b, 0xa72a, 0x8133, 0xb9ed, 0x417c, 0x3be7, 0x7786, 0x5964, 
    0x3, 0x40, 0x220, 0x4, 0x2, 0x9, 0x2, 0x4, 0x3, 0x9, 0x3, 0x4, 0x4, 
    0x9, 0x4, 0x4, 0x5, 0x9, 0x5, 0x4, 0x6, 0x9, 0x6, 0x4, 0x7, 0x9, 0x7, 
    0x4, 0x8, 0x9, 0x8, 0x4, 0x9, 0x9, 0x9, 0x4, 0xa, 0x9, 0xa, 0x4, 0xb, 
    0x9, 0xb, 0x4, 0xc, 0x9, 0xc, 0x4, 0xd, 0x9, 0xd, 0x4, 0xe, 0x9, 0xe, 
    0x4, 0xf, 0x9, 0xf, 0x4, 0x10, 0x9, 0x10, 0x4, 0x11, 0x9, 0x11, 0x4, 
    0x12, 0x9, 0x12, 0x4, 0x13, 0x9, 0x13, 0x4, 0x14, 0x9, 0x14, 0x4, 0x15, 
    0x9, 0x15, 0x4, 0x16, 0x9, 0x16, 0x4, 0x17, 0x9, 0x17, 0x4, 0x18, 0x9, 
    0x18, 0x4, 0x19, 0x9, 0x19, 0x4, 0x1a, 0x9, 0x1a, 0x4, 0x1b, 0x9, 0x1b, 
    0x4, 0x1c, 0x9, 0x1c, 0x4, 0x1d, 0x9, 0x1d, 0x4, 0x1e, 0x9, 0x1e, 0x4, 
    0x1f, 0x9, 0x1f, 0x4, 0x20, 0x9, 0x20, 0x4, 0x21, 0x9, 0x21, 0x4, 0x22, 
    0x9, 0x22, 0x4, 0x23, 0x9, 0x23, 0x4, 0x24, 0x9, 0x24, 0x4, 0x25, 0x9, 
    0x25, 0x4, 0x26, 0x9, 0x26, 0x4, 0x27, 0x9, 0x27, 0x4, 0x28, 0x9, 0x28, 
    0x3, 0x2, 0x7, 0x2, 0x52, 0xa, 0x2, 0xc, 0x2, 0xe, 0x2, 0x55, 0xb, 0x2, 
    0x3, 0x2, 0x7, 0x2, 0x58, 0xa, 0x2, 0xc, 0x2, 0xe, 0x2, 0x5b, 0xb, 0x2, 
    0x3, 0x2, 0x3, 0x2, 0x3, 0x3, 0x3, 0x3, 0x3, 0x3, 0x3, 0x4, 0x3, 0x4, 
    0x3, 0x4, 0x5, 0x4, 0x65, 0xa, 0x4, 0x3, 0x5, 0x3, 0x5, 0x3, 0x5, 0x3, 
    0x5, 0x3, 0x5, 0x3, 0x5, 0x7, 0x5, 0x6d, 0xa, 0x5, 0xc, 0x5, 0xe, 0x5, 
    0x70, 0xb, 0x5, 0x3, 0x5, 0x5, 0x5, 0x73, 0xa, 0x5, 0x5, 0x5, 0x75, 
    0xa, 0x5, 0x3, 0x5, 0x3, 0x5, 0x3, 0x5, 0x7, 0x5, 0x7a, 0xa, 0x5, 0xc, 
    0x5, 0xe, 0x5, 0x7d, 0xb, 0x5, 0x3, 0x5, 0x3, 0x5, 0x3, 0x6, 0x3, 0x6, 
    0x3, 0x6, 0x3, 0x6, 0x3, 0x6, 0x3, 0x6, 0x3, 0x7, 0x3, 0x7, 0x3, 0x7, 
    0x3, 0x7, 0x3, 0x7, 0x5, 0x7, 0x8c, 0xa, 0x7, 0x3, 0x8, 0x3, 0x8, 0x3, 
    0x8, 0x3, 0x8, 0x5, 0x8, 0x92, 0xa, 0x8, 0x3, 0x9, 0x3, 0x9, 0x3, 0x9, 
    0x3, 0x9, 0x5, 0x9, 0x98, 0xa, 0x9, 0x3, 0x9, 0x3, 0x9, 0x3, 0x9, 0x3, 
    0x9, 0x5, 0x9, 0x9e, 0xa, 0x9, 0x3, 0x9, 0x3, 0x9, 0x5, 0x9, 0xa2, 0xa, 
    0x9, 0x3, 0xa, 0x3, 0xa, 0x3, 0xa, 0x3, 0xa, 0x3, 0xa, 0x3, 0xa, 0x3, 
    0xa, 0x5, 0xa, 0xab, 0xa, 0xa, 0x3, 0xb, 0x3, 0xb, 0x3, 0xb, 0x3, 0xb, 
    0x3, 0xb, 0x3, 0xc, 0x3, 0xc, 0x3, 0xc, 0x3, 0xc, 0x3, 0xc, 0x3, 0xc, 
    0x7, 0xc, 0xb8, 0xa, 0xc, 0xc, 0xc, 0xe, 0xc, 0xbb, 0xb, 0xc, 0x5, 0xc, 
    0xbd, 0xa, 0xc, 0x3, 0xc, 0x3, 0xc, 0x3, 0xc, 0x5, 0xc, 0xc2, 0xa, 0xc, 
    0x3, 0xc, 0x3, 0xc, 0x3, 0xd, 0x3, 0xd, 0x3, 0xd, 0x3, 0xd, 0x3, 0xe, 
    0x3, 0xe, 0x3, 0xe, 0x5, 0xe, 0xcd, 0xa, 0xe, 0x3, 0xe, 0x5, 0xe, 0xd0, 
    0xa, 0xe, 0x3, 0xf, 0x3, 0xf, 0x7, 0xf, 0xd4, 0xa, 0xf, 0xc, 0xf, 0xe, 
    0xf, 0xd7, 0xb, 0xf, 0x3, 0xf, 0x3, 0xf, 0x3, 0x10, 0x3, 0x10, 0x5, 
    0x10, 0xdd, 0xa, 0x10, 0x3, 0x11, 0x3, 0x11, 0x3, 0x11, 0x3, 0x11, 0x7, 
    0x11, 0xe3, 0xa, 0x11, 0xc, 0x11, 0xe, 0x11, 0xe6, 0xb, 0x11, 0x3, 0x11, 
    0x3, 0x11, 0x3, 0x11, 0x3, 0x12, 0x3, 0x12, 0x3, 0x12, 0x3, 0x13, 0x3, 
    0x13, 0x3, 0x13, 0x3, 0x13, 0x3, 0x13, 0x3, 0x13, 0x3, 0x13, 0x3, 0x13, 
    0x3, 0x13, 0x5, 0x13, 0xf7, 0xa, 0x13, 0x3, 0x13, 0x3, 0x13, 0x3, 0x13, 
    0x3, 0x13, 0x3, 0x13, 0x3, 0x13, 0x5, 0x13, 0xff, 0xa, 0x13, 0x3, 0x13, 
    0x3, 0x13, 0x3, 0x13, 0x3, 0x13, 0x3, 0x13, 0x3, 0x13, 0x3, 0x13, 0x3, 
    0x13, 0x3, 0x13, 0x3, 0x13, 0x3, 0x13, 0x3, 0x13, 0x3, 0x13, 0x3, 0x13, 
    0x3, 0x13, 0x3, 0x13, 0x7, 0x13, 0x111, 0xa, 0x13, 0xc, 0x13, 0xe, 0x13, 
    0x114, 0xb, 0x13, 0x3, 0x14, 0x3, 0x14, 0x5, 0x14, 0x118, 0xa, 0x14, 
    0x3, 0x14, 0x3, 0x14, 0x5, 0x14, 0x11c, 0xa, 0x14, 0x5, 0x14, 0x11e, 
    0xa, 0x14, 0x3, 0x15, 0x3, 0x15, 0x3, 0x15, 0x7, 0x15, 0x123, 0xa, 0x15, 
    0xc, 0x15, 0xe, 0x15, 0x126, 0xb, 0x15, 0x3, 0x15, 0x5, 0x15, 0x129, 
    0xa, 0x15, 0x3, 0x16, 0x3, 0x16, 0x3, 0x16, 0x3, 0x16, 0x7, 0x16, 0x12f, 
    0xa, 0x16, 0xc, 0x16, 0xe, 0x16, 0x132, 0xb, 0x16, 0x3, 0x16, 0x5, 0x16, 
    0x135, 0xa, 0x16, 0x5, 0x16, 0x137, 0xa, 0x16, 0x3, 0x16, 0x3, 0x16, 
    0x3, 0x17, 0x3, 0x17, 0x3, 0x17, 0x5, 0x17, 0x13e, 0xa, 0x17, 0x3, 0x17, 
    0x3, 0x17, 0x3, 0x18, 0x3, 0x18, 0x3, 0x18, 0x3, 0x18, 0x3, 0x18, 0x5, 
    0x18, 0x147, 0xa, 0x18, 0x3, 0x18, 0x3, 0x18, 0x7, 0x18, 0x14b, 0xa, 
    0x18, 0xc, 0x18, 0xe, 0x18, 0x14e, 0xb, 0x18, 0x3, 0x18, 0x3, 0x18, 
    0x3, 0x19, 0x3, 0x19, 0x3, 0x19, 0x3, 0x19, 0x3, 0x19, 0x3, 0x19, 0x7, 
    0x19, 0x158, 0xa, 0x19, 0xc, 0x19, 0xe, 0x19, 0x15b, 0xb, 0x19, 0x3, 
    0x19, 0x3, 0x19, 0x3, 0x19, 0x5, 0x19, 0x160, 0xa, 0x19, 0x3, 0x19, 
    0x3, 0x19, 0x3, 0x19, 0x5, 0x19, 0x165, 0xa, 0x19, 0x3, 0x19, 0x3, 0x19, 
    0x3, 0x19, 0x5, 0x19, 0x16a, 0xa, 0x19, 0x3, 0x19, 0x3, 0x19, 0x3, 0x19, 
    0x3, 0x19, 0x3, 0x19, 0x3, 0x19, 0x5, 0x19, 0x172, 0xa, 0x19, 0x3, 0x19, 
    0x7, 0x19, 0x175, 0xa, 0x19, 0xc, 0x19, 0xe, 0x19, 0x178, 0xb, 0x19, 
    0x3, 0x19, 0x3, 0x19, 0x7, 0x19, 0x17c, 0xa, 0x19, 0xc, 0x19, 0xe, 0x19, 
    0x17f, 0xb, 0x19, 0x3, 0x19, 0x3, 0x19, 0x3, 0x19, 0x3, 0x19, 0x3, 0x19, 
    0x3, 0x19, 0x3, 0x19, 0x3, 0x19, 0x3, 0x19, 0x3, 0x19, 0x3, 0x19, 0x5, 
    0x19, 0x18c, 0xa, 0x19, 0x3, 0x1a, 0x3, 0x1a, 0x3, 0x1a, 0x3, 0x1a, 
    0x3, 0x1b, 0x3, 0x1b, 0x3, 0x1b, 0x3, 0x1c, 0x3, 0x1c, 0x7, 0x1c, 0x197, 
    0xa, 0x1c, 0xc, 0x1c, 0xe, 0x1c, 0x19a, 0xb, 0x1c, 0x3, 0x1d, 0x3, 0x1d, 
    0x3, 0x1d, 0x3, 0x1d, 0x3, 0x1d, 0x3, 0x1d, 0x3, 0x1d, 0x3, 0x1d, 0x3, 
    0x1d, 0x7, 0x1d, 0x1a5, 0xa, 0x1d, 0xc, 0x1d, 0xe, 0x1d, 0x1a8, 0xb, 
    0x1d, 0x3, 0x1d, 0x3, 0x1d, 0x3, 0x1d, 0x3, 0x1d, 0x3, 0x1d, 0x3, 0x1d, 
    0x3, 0x1d, 0x3, 0x1d, 0x7, 0x1d, 0x1b2, 0xa, 0x1d, 0xc, 0x1d, 0xe, 0x1d, 
    0x1b5, 0xb, 0x1d, 0x3, 0x1d, 0x3, 0x1d, 0x3, 0x1d, 0x5, 0x1d, 0x1ba, 
    0xa, 0x1d, 0x3, 0x1d, 0x5, 0x1d, 0x1bd, 0xa, 0x1d, 0x3, 0x1e, 0x3, 0x1e, 
    0x5, 0x1e, 0x1c1, 0xa, 0x1e, 0x3, 0x1e, 0x3, 0x1e, 0x3, 0x1e, 0x3, 0x1f, 
    0x3, 0x1f, 0x3, 0x1f, 0x7, 0x1f, 0x1c9, 0xa, 0x1f, 0xc, 0x1f, 0xe, 0x1f, 
    0x1cc, 0xb, 0x1f, 0x3, 0x20, 0x3, 0x20, 0x3, 0x20, 0x3, 0x20, 0x3, 0x20, 
    0x5, 0x20, 0x1d3, 0xa, 0x20, 0x3, 0x21, 0x3, 0x21, 0x3, 0x21, 0x5, 0x21, 
    0x1d8, 0xa, 0x21, 0x3, 0x21, 0x3, 0x21, 0x5, 0x21, 0x1dc, 0xa, 0x21, 
    0x5, 0x21, 0x1de, 0xa, 0x21, 0x3, 0x22, 0x3, 0x22, 0x3, 0x22, 0x3, 0x22, 
    0x3, 0x22, 0x7, 0x22, 0x1e5, 0xa, 0x22, 0xc, 0x22, 0xe, 0x22, 0x1e8, 
    0xb, 0x22, 0x3, 0x22, 0x3, 0x22, 0x3, 0x22, 0x5, 0x22, 0x1ed, 0xa, 0x22, 
    0x3, 0x23, 0x3, 0x23, 0x3, 0x23, 0x3, 0x23, 0x3, 0x23, 0x7, 0x23, 0x1f4, 
    0xa, 0x23, 0xc, 0x23, 0xe, 0x23, 0x1f7, 0xb, 0x23, 0x3, 0x24, 0x3, 0x24, 
    0x3, 0x24, 0x3, 0x24, 0x7, 0x24, 0x1fd, 0xa, 0x24, 0xc, 0x24, 0xe, 0x24, 
    0x200, 0xb, 0x24, 0x3, 0x24, 0x3, 0x24, 0x3, 0x25, 0x3, 0x25, 0x3, 0x25, 
    0x5, 0x25, 0x207, 0xa, 0x25, 0x3, 0x26, 0x3, 0x26, 0x3, 0x26, 0x5, 0x26, 
    0x20c, 0xa, 0x26, 0x3, 0x27, 0x3, 0x27, 0x5, 0x27, 0x210, 0xa, 0x27, 
    0x3, 0x27, 0x3, 0x27, 0x3, 0x27, 0x3, 0x27, 0x7, 0x27, 0x216, 0xa, 0x27, 
    0xc, 0x27, 0xe, 0x27, 0x219, 0xb, 0x27, 0x3, 0x27, 0x5, 0x27, 0x21c, 
    0xa, 0x27, 0x3, 0x28, 0x3, 0x28, 0x3, 0x28, 0x2, 0x3, 0x24, 0x29, 0x2, 
    0x4, 0x6, 0x8, 0xa, 0xc, 0xe, 0x10, 0x12, 0x14, 0x16, 0x18, 0x1a, 0x1c, 
    0x1e, 0x20, 0x22, 0x24, 0x26, 0x28, 0x2a, 0x2c, 0x2e, 0x30, 0x32, 0x34, 
    0x36, 0x38, 0x3a, 0x3c, 0x3e, 0x40, 0x42, 0x44, 0x46, 0x48, 0x4a, 0x4c, 
    0x4e, 0x2, 0x9, 0x3, 0x2, 0x4, 0x5, 0x3, 0x2, 0x1b, 0x1c, 0x4, 0x2, 
    0x10, 0x10, 0x17, 0x19, 0x4, 0x2, 0x16, 0x16, 0x1a, 0x1a, 0x3, 0x2, 
    0x2d, 0x2e, 0x3, 0x2, 0x32, 0x33, 0x8, 0x2, 0x1f, 0x22, 0x24, 0x29, 
    0x2c, 0x35, 0x37, 0x37, 0x39, 0x39, 0x3d, 0x3d, 0x2, 0x253, 0x2, 0x53, 
    0x3, 0x2, 0x2, 0x2, 0x4, 0x5e, 0x3, 0x2, 0x2, 0x2, 0x6, 0x64, 0x3, 0x2, 
    0x2, 0x2, 0x8, 0x66, 0x3, 0x2, 0x2, 0x2, 0xa, 0x80, 0x3, 0x2, 0x2, 0x2, 
    0xc, 0x86, 0x3, 0x2, 0x2, 0x2, 0xe, 0x91, 0x3, 0x2, 0x2, 0x2, 0x10, 
    0x93, 0x3, 0x2, 0x2, 0x2, 0x12, 0xa3, 0x3, 0x2, 0x2, 0x2, 0x14, 0xac, 
    0x3, 0x2, 0x2, 0x2, 0x16, 0xb1, 0x3, 0x2, 0x2, 0x2, 0x18, 0xc5, 0x3, 
    0x2, 0x2, 0x2, 0x1a, 0xc9, 0x3, 0x2, 0x2, 0x2, 0x1c, 0xd1, 0x3, 0x2, 
    0x2, 0x2, 0x1e, 0xdc, 0x3, 0x2, 0x2, 0x2, 0x20, 0xde, 0x3, 0x2, 0x2, 
    0x2, 0x22, 0xea, 0x3, 0x2, 0x2, 0x2, 0x24, 0xfe, 0x3, 0x2, 0x2, 0x2, 
    0x26, 0x11d, 0x3, 0x2, 0x2, 0x2, 0x28, 0x11f, 0x3, 0x2, 0x2, 0x2, 0x2a, 
    0x12a, 0x3, 0x2, 0x2, 0x2, 0x2c, 0x13d, 0x3, 0x2, 0x2, 0x2, 0x2e, 0x141, 
    0x3, 0x2, 0x2, 0x2, 0x30, 0x18b, 0x3, 0x2, 0x2, 0x2, 0x32, 0x18d, 0x3, 
    0x2, 0x2, 0x2, 0x34, 0x191, 0x3, 0x2, 0x2, 0x2, 0x36, 0x194, 0x3, 0x2, 
    0x2, 0x2, 0x38, 0x1bc, 0x3, 0x2, 0x2, 0x2, 0x3a, 0x1c0, 0x3, 0x2, 0x2, 
    0x2, 0x3c, 0x1c5, 0x3, 0x2, 0x2, 0x2, 0x3e, 0x1cd, 0x3, 0x2, 0x2, 0x2, 
    0x40, 0x1dd, 0x3, 0x2, 0x2, 0x2, 0x42, 0x1ec, 0x3, 0x2, 0x2, 0x2, 0x44, 
    0x1ee, 0x3, 0x2, 0x2, 0x2, 0x46, 0x1f8, 0x3, 0x2, 0x2, 0x2, 0x48, 0x203, 
    0x3, 0x2, 0x2, 0x2, 0x4a, 0x208, 0x3, 0x2, 0x2, 0x2, 0x4c, 0x20d, 0x3, 
    0x2, 0x2, 0x2, 0x4e, 0x21d, 0x3, 0x2, 0x2, 0x2, 0x50, 0x52, 0x5, 0x4, 
    0x3, 0x2, 0x51, 0x50, 0x3, 0x2, 0x2, 0x2, 0x52, 0x55, 0x3, 0x2, 0x2, 
    0x2, 0x53, 0x51, 0x3, 0x2, 0x2, 0x2, 0x53, 0x54, 0x3, 0x2, 0x2, 0x2, 
    0x54, 0x59, 0x3, 0x2, 0x2, 0x2, 0x55, 0x53, 0x3, 0x2, 0x2, 0x2, 0x56, 
    0x58, 0x5, 0x6, 0x4, 0x2, 0x57, 0x56, 0x3, 0x2, 0x2, 0x2, 0x58, 0x5b, 
    0x3, 0x2, 0x2, 0x2, 0x59, 0x57, 0x3, 0x2, 0x2, 0x2, 0x59, 0x5a, 0x3, 
    0x2, 0x2, 0x2, 0x5a, 0x5c, 0x3, 0x2, 0x2, 0x2, 0x5b, 0x59, 0x3, 0x2, 
    0x2, 0x2, 0x5c, 0x5d, 0x7, 0x2, 0x2, 0x3, 0x5d, 0x3, 0x3, 0x2, 0x2, 
    0x2, 0x5e, 0x5f, 0x7, 0x3, 0x2, 0x2, 0x5f, 0x60, 0x7, 0x3c, 0x2, 0x2, 
    0x60, 0x5, 0x3, 0x2, 0x2, 0x2, 0x61, 0x65, 0x5, 0x8, 0x5, 0x2, 0x62, 
    0x65, 0x5, 0xa, 0x6, 0x2, 0x63, 0x65, 0x5, 0x2e, 0x18, 0x2, 0x64, 0x61, 
    0x3, 0x2, 0x2, 0x2, 0x64, 0x62, 0x3, 0x2, 0x2, 0x2, 0x64, 0x63, 0x3, 
    0x2, 0x2, 0x2, 0x65, 0x7, 0x3, 0x2, 0x2, 0x2, 0x66, 0x67, 0x9, 0x2, 
    0x2, 0x2, 0x67, 0x68, 0x5, 0x4e, 0x28, 0x2, 0x68, 0x74, 0x7, 0x6, 0x2, 
    0x2, 0x69, 0x6e, 0x5, 0xc, 0x7, 0x2, 0x6a, 0x6b, 0x7, 0x7, 0x2, 0x2, 
    0x6b, 0x6d, 0x5, 0xc, 0x7, 0x2, 0x6c, 0x6a, 0x3, 0x2, 0x2, 0x2, 0x6d, 
    0x70, 0x3, 0x2, 0x2, 0x2, 0x6e, 0x6c, 0x3, 0x2, 0x2, 0x2, 0x6e, 0x6f, 
    0x3, 0x2, 0x2, 0x2, 0x6f, 0x72, 0x3, 0x2, 0x2, 0x2, 0x70, 0x6e, 0x3, 
    0x2, 0x2, 0x2, 0x71, 0x73, 0x7, 0x7, 0x2, 0x2, 0x72, 0x71, 0x3, 0x2, 
    0x2, 0x2, 0x72, 0x73, 0x3, 0x2, 0x2, 0x2, 0x73, 0x75, 0x3, 0x2, 0x2, 
    0x2, 0x74, 0x69, 0x3, 0x2, 0x2, 0x2, 0x74, 0x75, 0x3, 0x2, 0x2, 0x2, 
    0x75, 0x76, 0x3, 0x2, 0x2, 0x2, 0x76, 0x77, 0x7, 0x8, 0x2, 0x2, 0x77, 
    0x7b, 0x7, 0x9, 0x2, 0x2, 0x78, 0x7a, 0x5, 0xe, 0x8, 0x2, 0x79, 0x78, 
    0x3, 0x2, 0x2, 0x2, 0x7a, 0x7d, 0x3, 0x2, 0x2, 0x2, 0x7b, 0x79, 0x3, 
    0x2, 0x2, 0x2, 0x7b, 0x7c, 0x3, 0x2, 0x2, 0x2, 0x7c, 0x7e, 0x3, 0x2, 
    0x2, 0x2, 0x7d, 0x7b, 0x3, 0x2, 0x2, 0x2, 0x7e, 0x7f, 0x7, 0xa, 0x2, 
    0x2, 0x7f, 0x9, 0x3, 0x2, 0x2, 0x2, 0x80, 0x81, 0x7, 0x5, 0x2, 0x2, 
    0x81, 0x82, 0x5, 0x4e, 0x28, 0x2, 0x82, 0x83, 0x7, 0xb, 0x2, 0x2, 0x83, 
    0x84, 0x5, 0x4e, 0x28, 0x2, 0x84, 0x85, 0x5, 0x2a, 0x16, 0x2, 0x85, 
    0xb, 0x3, 0x2, 0x2, 0x2, 0x86, 0x87, 0x5, 0x4e, 0x28, 0x2, 0x87, 0x88, 
    0x7, 0xc, 0x2, 0x2, 0x88, 0x8b, 0x5, 0x4e, 0x28, 0x2, 0x89, 0x8a, 0x7, 
    0xb, 0x2, 0x2, 0x8a, 0x8c, 0x5, 0x24, 0x13, 0x2, 0x8b, 0x89, 0x3, 0x2, 
    0x2, 0x2, 0x8b, 0x8c, 0x3, 0x2, 0x2, 0x2, 0x8c, 0xd, 0x3, 0x2, 0x2, 
    0x2, 0x8d, 0x92, 0x5, 0x10, 0x9, 0x2, 0x8e, 0x92, 0x5, 0x12, 0xa, 0x2, 
    0x8f, 0x92, 0x5, 0x14, 0xb, 0x2, 0x90, 0x92, 0x5, 0x16, 0xc, 0x2, 0x91, 
    0x8d, 0x3, 0x2, 0x2, 0x2, 0x91, 0x8e, 0x3, 0x2, 0x2, 0x2, 0x91, 0x8f, 
    0x3, 0x2, 0x2, 0x2, 0x91, 0x90, 0x3, 0x2, 0x2, 0x2, 0x92, 0xf, 0x3, 
    0x2, 0x2, 0x2, 0x93, 0x94, 0x7, 0xd, 0x2, 0x2, 0x94, 0x97, 0x5, 0x4e, 
    0x28, 0x2, 0x95, 0x96, 0x7, 0xc, 0x2, 0x2, 0x96, 0x98, 0x5, 0x4e, 0x28, 
    0x2, 0x97, 0x95, 0x3, 0x2, 0x2, 0x2, 0x97, 0x98, 0x3, 0x2, 0x2, 0x2, 
    0x98, 0x99, 0x3, 0x2, 0x2, 0x2, 0x99, 0x9a, 0x7, 0xb, 0x2, 0x2, 0x9a, 
    0x9b, 0x5, 0x4e, 0x28, 0x2, 0x9b, 0x9d, 0x7, 0xe, 0x2, 0x2, 0x9c, 0x9e, 
    0x5, 0x28, 0x15, 0x2, 0x9d, 0x9c, 0x3, 0x2, 0x2, 0x2, 0x9d, 0x9e, 0x3, 
    0x2, 0x2, 0x2, 0x9e, 0x9f, 0x3, 0x2, 0x2, 0x2, 0x9f, 0xa1, 0x7, 0xf, 
    0x2, 0x2, 0xa0, 0xa2, 0x5, 0x2a, 0x16, 0x2, 0xa1, 0xa0, 0x3, 0x2, 0x2, 
    0x2, 0xa1, 0xa2, 0x3, 0x2, 0x2, 0x2, 0xa2, 0x11, 0x3, 0x2, 0x2, 0x2, 
    0xa3, 0xa4, 0x7, 0x4, 0x2, 0x2, 0xa4, 0xa5, 0x5, 0x4e, 0x28, 0x2, 0xa5, 
    0xa6, 0x7, 0xb, 0x2, 0x2, 0xa6, 0xa7, 0x5, 0x4e, 0x28, 0x2, 0xa7, 0xaa, 
    0x5, 0x2a, 0x16, 0x2, 0xa8, 0xa9, 0x7, 0x10, 0x2, 0x2, 0xa9, 0xab, 0x5, 
    0x24, 0x13, 0x2, 0xaa, 0xa8, 0x3, 0x2, 0x2, 0x2, 0xaa, 0xab, 0x3, 0x2, 
    0x2, 0x2, 0xab, 0x13, 0x3, 0x2, 0x2, 0x2, 0xac, 0xad, 0x7, 0x11, 0x2, 
    0x2, 0xad, 0xae, 0x5, 0x4e, 0x28, 0x2, 0xae, 0xaf, 0x7, 0xb, 0x2, 0x2, 
    0xaf, 0xb0, 0x5, 0x24, 0x13, 0x2, 0xb0, 0x15, 0x3, 0x2, 0x2, 0x2, 0xb1, 
    0xb2, 0x7, 0x12, 0x2, 0x2, 0xb2, 0xb3, 0x5, 0x4e, 0x28, 0x2, 0xb3, 0xbc, 
    0x7, 0x6, 0x2, 0x2, 0xb4, 0xb9, 0x5, 0x18, 0xd, 0x2, 0xb5, 0xb6, 0x7, 
    0x7, 0x2, 0x2, 0xb6, 0xb8, 0x5, 0x18, 0xd, 0x2, 0xb7, 0xb5, 0x3, 0x2, 
    0x2, 0x2, 0xb8, 0xbb, 0x3, 0x2, 0x2, 0x2, 0xb9, 0xb7, 0x3, 0x2, 0x2, 
    0x2, 0xb9, 0xba, 0x3, 0x2, 0x2, 0x2, 0xba, 0xbd, 0x3, 0x2, 0x2, 0x2, 
    0xbb, 0xb9, 0x3, 0x2, 0x2, 0x2, 0xbc, 0xb4, 0x3, 0x2, 0x2, 0x2, 0xbc, 
    0xbd, 0x3, 0x2, 0x2, 0x2, 0xbd, 0xbe, 0x3, 0x2, 0x2, 0x2, 0xbe, 0xc1, 
    0x7, 0x8, 0x2, 0x2, 0xbf, 0xc0, 0x7, 0x13, 0x2, 0x2, 0xc0, 0xc2, 0x5, 
    0x1a, 0xe, 0x2, 0xc1, 0xbf, 0x3, 0x2, 0x2, 0x2, 0xc1, 0xc2, 0x3, 0x2, 
    0x2, 0x2, 0xc2, 0xc3, 0x3, 0x2, 0x2, 0x2, 0xc3, 0xc4, 0x5, 0x1c, 0xf, 
    0x2, 0xc4, 0x17, 0x3, 0x2, 0x2, 0x2, 0xc5, 0xc6, 0x5, 0x4e, 0x28, 0x2, 
    0xc6, 0xc7, 0x7, 0xc, 0x2, 0x2, 0xc7, 0xc8, 0x5, 0x1a, 0xe, 0x2, 0xc8, 
    0x19, 0x3, 0x2, 0x2, 0x2, 0xc9, 0xcf, 0x5, 0x4e, 0x28, 0x2, 0xca, 0xcc, 
    0x7, 0xe, 0x2, 0x2, 0xcb, 0xcd, 0x5, 0x28, 0x15, 0x2, 0xcc, 0xcb, 0x3, 
    0x2, 0x2, 0x2, 0xcc, 0xcd, 0x3, 0x2, 0x2, 0x2, 0xcd, 0xce, 0x3, 0x2, 
    0x2, 0x2, 0xce, 0xd0, 0x7, 0xf, 0x2, 0x2, 0xcf, 0xca, 0x3, 0x2, 0x2, 
    0x2, 0xcf, 0xd0, 0x3, 0x2, 0x2, 0x2, 0xd0, 0x1b, 0x3, 0x2, 0x2, 0x2, 
    0xd1, 0xd5, 0x7, 0x9, 0x2, 0x2, 0xd2, 0xd4, 0x5, 0x1e, 0x10, 0x2, 0xd3, 
    0xd2, 0x3, 0x2, 0x2, 0x2, 0xd4, 0xd7, 0x3, 0x2, 0x2, 0x2, 0xd5, 0xd3, 
    0x3, 0x2, 0x2, 0x2, 0xd5, 0xd6, 0x3, 0x2, 0x2, 0x2, 0xd6, 0xd8, 0x3, 
    0x2, 0x2, 0x2, 0xd7, 0xd5, 0x3, 0x2, 0x2, 0x2, 0xd8, 0xd9, 0x7, 0xa, 
    0x2, 0x2, 0xd9, 0x1d, 0x3, 0x2, 0x2, 0x2, 0xda, 0xdd, 0x5, 0x20, 0x11, 
    0x2, 0xdb, 0xdd, 0x5, 0x22, 0x12, 0x2, 0xdc, 0xda, 0x3, 0x2, 0x2, 0x2, 
    0xdc, 0xdb, 0x3, 0x2, 0x2, 0x2, 0xdd, 0x1f, 0x3, 0x2, 0x2, 0x2, 0xde, 
    0xdf, 0x7, 0x11, 0x2, 0x2, 0xdf, 0xe4, 0x5, 0x4e, 0x28, 0x2, 0xe0, 0xe1, 
    0x7, 0x7, 0x2, 0x2, 0xe1, 0xe3, 0x5, 0x4e, 0x28, 0x2, 0xe2, 0xe0, 0x3, 
    0x2, 0x2, 0x2, 0xe3, 0xe6, 0x3, 0x2, 0x2, 0x2, 0xe4, 0xe2, 0x3, 0x2, 
    0x2, 0x2, 0xe4, 0xe5, 0x3, 0x2, 0x2, 0x2, 0xe5, 0xe7, 0x3, 0x2, 0x2, 
    0x2, 0xe6, 0xe4, 0x3, 0x2, 0x2, 0x2, 0xe7, 0xe8, 0x7, 0xb, 0x2, 0x2, 
    0xe8, 0xe9, 0x5, 0x24, 0x13, 0x2, 0xe9, 0x21, 0x3, 0x2, 0x2, 0x2, 0xea, 
    0xeb, 0x7, 0x14, 0x2, 0x2, 0xeb, 0xec, 0x5, 0x24, 0x13, 0x2, 0xec, 0x23, 
    0x3, 0x2, 0x2, 0x2, 0xed, 0xee, 0x8, 0x13, 0x1, 0x2, 0xee, 0xef, 0x7, 
    0x16, 0x2, 0x2, 0xef, 0xff, 0x5, 0x24, 0x13, 0xc, 0xf0, 0xf1, 0x7, 0x6, 
    0x2, 0x2, 0xf1, 0xf2, 0x5, 0x24, 0x13, 0x2, 0xf2, 0xf3, 0x7, 0x8, 0x2, 
    0x2, 0xf3, 0xff, 0x3, 0x2, 0x2, 0x2, 0xf4, 0xf6, 0x7, 0xe, 0x2, 0x2, 
    0xf5, 0xf7, 0x5, 0x28, 0x15, 0x2, 0xf6, 0xf5, 0x3, 0x2, 0x2, 0x2, 0xf6, 
    0xf7, 0x3, 0x2, 0x2, 0x2, 0xf7, 0xf8, 0x3, 0x2, 0x2, 0x2, 0xf8, 0xff, 
    0x7, 0xf, 0x2, 0x2, 0xf9, 0xff, 0x7, 0x3a, 0x2, 0x2, 0xfa, 0xff, 0x7, 
    0x3b, 0x2, 0x2, 0xfb, 0xff, 0x7, 0x3c, 0x2, 0x2, 0xfc, 0xff, 0x9, 0x3, 
    0x2, 0x2, 0xfd, 0xff, 0x5, 0x4e, 0x28, 0x2, 0xfe, 0xed, 0x3, 0x2, 0x2, 
    0x2, 0xfe, 0xf0, 0x3, 0x2, 0x2, 0x2, 0xfe, 0xf4, 0x3, 0x2, 0x2, 0x2, 
    0xfe, 0xf9, 0x3, 0x2, 0x2, 0x2, 0xfe, 0xfa, 0x3, 0x2, 0x2, 0x2, 0xfe, 
    0xfb, 0x3, 0x2, 0x2, 0x2, 0xfe, 0xfc, 0x3, 0x2, 0x2, 0x2, 0xfe, 0xfd, 
    0x3, 0x2, 0x2, 0x2, 0xff, 0x112, 0x3, 0x2, 0x2, 0x2, 0x100, 0x101, 0xc, 
    0xb, 0x2, 0x2, 0x101, 0x102, 0x9, 0x4, 0x2, 0x2, 0x102, 0x111, 0x5, 
    0x24, 0x13, 0xc, 0x103, 0x104, 0xc, 0xa, 0x2, 0x2, 0x104, 0x105, 0x9, 
    0x5, 0x2, 0x2, 0x105, 0x111, 0x5, 0x24, 0x13, 0xb, 0x106, 0x107, 0xc, 
    0xf, 0x2, 0x2, 0x107, 0x108, 0x7, 0x15, 0x2, 0x2, 0x108, 0x111, 0x5, 
    0x4e, 0x28, 0x2, 0x109, 0x10a, 0xc, 0xe, 0x2, 0x2, 0x10a, 0x10b, 0x7, 
    0xe, 0x2, 0x2, 0x10b, 0x10c, 0x5, 0x26, 0x14, 0x2, 0x10c, 0x10d, 0x7, 
    0xf, 0x2, 0x2, 0x10d, 0x111, 0x3, 0x2, 0x2, 0x2, 0x10e, 0x10f, 0xc, 
    0xd, 0x2, 0x2, 0x10f, 0x111, 0x5, 0x2a, 0x16, 0x2, 0x110, 0x100, 0x3, 
    0x2, 0x2, 0x2, 0x110, 0x103, 0x3, 0x2, 0x2, 0x2, 0x110, 0x106, 0x3, 
    0x2, 0x2, 0x2, 0x110, 0x109, 0x3, 0x2, 0x2, 0x2, 0x110, 0x10e, 0x3, 
    0x2, 0x2, 0x2, 0x111, 0x114, 0x3, 0x2, 0x2, 0x2, 0x112, 0x110, 0x3, 
    0x2, 0x2, 0x2, 0x112, 0x113, 0x3, 0x2, 0x2, 0x2, 0x113, 0x25, 0x3, 0x2, 
    0x2, 0x2, 0x114, 0x112, 0x3, 0x2, 0x2, 0x2, 0x115, 0x11e, 0x5, 0x24, 
    0x13, 0x2, 0x116, 0x118, 0x5, 0x24, 0x13, 0x2, 0x117, 0x116, 0x3, 0x2, 
    0x2, 0x2, 0x117, 0x118, 0x3, 0x2, 0x2, 0x2, 0x118, 0x119, 0x3, 0x2, 
    0x2, 0x2, 0x119, 0x11b, 0x7, 0xc, 0x2, 0x2, 0x11a, 0x11c, 0x5, 0x24, 
    0x13, 0x2, 0x11b, 0x11a, 0x3, 0x2, 0x2, 0x2, 0x11b, 0x11c, 0x3, 0x2, 
    0x2, 0x2, 0x11c, 0x11e, 0x3, 0x2, 0x2, 0x2, 0x11d, 0x115, 0x3, 0x2, 
    0x2, 0x2, 0x11d, 0x117, 0x3, 0x2, 0x2, 0x2, 0x11e, 0x27, 0x3, 0x2, 0x2, 
    0x2, 0x11f, 0x124, 0x5, 0x24, 0x13, 0x2, 0x120, 0x121, 0x7, 0x7, 0x2, 
    0x2, 0x121, 0x123, 0x5, 0x24, 0x13, 0x2, 0x122, 0x120, 0x3, 0x2, 0x2, 
    0x2, 0x123, 0x126, 0x3, 0x2, 0x2, 0x2, 0x124, 0x122, 0x3, 0x2, 0x2, 
    0x2, 0x124, 0x125, 0x3, 0x2, 0x2, 0x2, 0x125, 0x128, 0x3, 0x2, 0x2, 
    0x2, 0x126, 0x124, 0x3, 0x2, 0x2, 0x2, 0x127, 0x129, 0x7, 0x7, 0x2, 
    0x2, 0x128, 0x127, 0x3, 0x2, 0x2, 0x2, 0x128, 0x129, 0x3, 0x2, 0x2, 
    0x2, 0x129, 0x29, 0x3, 0x2, 0x2, 0x2, 0x12a, 0x136, 0x7, 0x6, 0x2, 0x2, 
    0x12b, 0x130, 0x5, 0x2c, 0x17, 0x2, 0x12c, 0x12d, 0x7, 0x7, 0x2, 0x2, 
    0x12d, 0x12f, 0x5, 0x2c, 0x17, 0x2, 0x12e, 0x12c, 0x3, 0x2, 0x2, 0x2, 
    0x12f, 0x132, 0x3, 0x2, 0x2, 0x2, 0x130, 0x12e, 0x3, 0x2, 0x2, 0x2, 
    0x130, 0x131, 0x3, 0x2, 0x2, 0x2, 0x131, 0x134, 0x3, 0x2, 0x2, 0x2, 
    0x132, 0x130, 0x3, 0x2, 0x2, 0x2, 0x133, 0x135, 0x7, 0x7, 0x2, 0x2, 
    0x134, 0x133, 0x3, 0x2, 0x2, 0x2, 0x134, 0x135, 0x3, 0x2, 0x2, 0x2, 
    0x135, 0x137, 0x3, 0x2, 0x2, 0x2, 0x136, 0x12b, 0x3, 0x2, 0x2, 0x2, 
    0x136, 0x137, 0x3, 0x2, 0x2, 0x2, 0x137, 0x138, 0x3, 0x2, 0x2, 0x2, 
    0x138, 0x139, 0x7, 0x8, 0x2, 0x2, 0x139, 0x2b, 0x3, 0x2, 0x2, 0x2, 0x13a, 
    0x13b, 0x5, 0x4e, 0x28, 0x2, 0x13b, 0x13c, 0x7, 0xb, 0x2, 0x2, 0x13c, 
    0x13e, 0x3, 0x2, 0x2, 0x2, 0x13d, 0x13a, 0x3, 0x2, 0x2, 0x2, 0x13d, 
    0x13e, 0x3, 0x2, 0x2, 0x2, 0x13e, 0x13f, 0x3, 0x2, 0x2, 0x2, 0x13f, 
    0x140, 0x5, 0x24, 0x13, 0x2, 0x140, 0x2d, 0x3, 0x2, 0x2, 0x2, 0x141, 
    0x142, 0x7, 0x1d, 0x2, 0x2, 0x142, 0x143, 0x5, 0x4e, 0x28, 0x2, 0x143, 
    0x144, 0x7, 0x1e, 0x2, 0x2, 0x144, 0x146, 0x5, 0x4e, 0x28, 0x2, 0x145, 
    0x147, 0x5, 0x2a, 0x16, 0x2, 0x146, 0x145, 0x3, 0x2, 0x2, 0x2, 0x146, 
    0x147, 0x3, 0x2, 0x2, 0x2, 0x147, 0x148, 0x3, 0x2, 0x2, 0x2, 0x148, 
    0x14c, 0x7, 0x9, 0x2, 0x2, 0x149, 0x14b, 0x5, 0x30, 0x19, 0x2, 0x14a, 
    0x149, 0x3, 0x2, 0x2, 0x2, 0x14b, 0x14e, 0x3, 0x2, 0x2, 0x2, 0x14c, 
    0x14a, 0x3, 0x2, 0x2, 0x2, 0x14c, 0x14d, 0x3, 0x2, 0x2, 0x2, 0x14d, 
    0x14f, 0x3, 0x2, 0x2, 0x2, 0x14e, 0x14c, 0x3, 0x2, 0x2, 0x2, 0x14f, 
    0x150, 0x7, 0xa, 0x2, 0x2, 0x150, 0x2f, 0x3, 0x2, 0x2, 0x2, 0x151, 0x152, 
    0x7, 0x1f, 0x2, 0x2, 0x152, 0x18c, 0x7, 0x3c, 0x2, 0x2, 0x153, 0x154, 
    0x7, 0x20, 0x2, 0x2, 0x154, 0x159, 0x5, 0x32, 0x1a, 0x2, 0x155, 0x156, 
    0x7, 0x7, 0x2, 0x2, 0x156, 0x158, 0x5, 0x32, 0x1a, 0x2, 0x157, 0x155, 
    0x3, 0x2, 0x2, 0x2, 0x158, 0x15b, 0x3, 0x2, 0x2, 0x2, 0x159, 0x157, 
    0x3, 0x2, 0x2, 0x2, 0x159, 0x15a, 0x3, 0x2, 0x2, 0x2, 0x15a, 0x18c, 
    0x3, 0x2, 0x2, 0x2, 0x15b, 0x159, 0x3, 0x2, 0x2, 0x2, 0x15c, 0x15d, 
    0x7, 0x21, 0x2, 0x2, 0x15d, 0x15f, 0x5, 0x4e, 0x28, 0x2, 0x15e, 0x160, 
    0x5, 0x2a, 0x16, 0x2, 0x15f, 0x15e, 0x3, 0x2, 0x2, 0x2, 0x15f, 0x160, 
    0x3, 0x2, 0x2, 0x2, 0x160, 0x18c, 0x3, 0x2, 0x2, 0x2, 0x161, 0x164, 
    0x7, 0x22, 0x2, 0x2, 0x162, 0x165, 0x5, 0x4e, 0x28, 0x2, 0x163, 0x165, 
    0x7, 0x23, 0x2, 0x2, 0x164, 0x162, 0x3, 0x2, 0x2, 0x2, 0x164, 0x163, 
    0x3, 0x2, 0x2, 0x2, 0x165, 0x18c, 0x3, 0x2, 0x2, 0x2, 0x166, 0x169, 
    0x7, 0x24, 0x2, 0x2, 0x167, 0x168, 0x7, 0x25, 0x2, 0x2, 0x168, 0x16a, 
    0x7, 0x3a, 0x2, 0x2, 0x169, 0x167, 0x3, 0x2, 0x2, 0x2, 0x169, 0x16a, 
    0x3, 0x2, 0x2, 0x2, 0x16a, 0x18c, 0x3, 0x2, 0x2, 0x2, 0x16b, 0x18c, 
    0x7, 0x26, 0x2, 0x2, 0x16c, 0x18c, 0x7, 0x27, 0x2, 0x2, 0x16d, 0x16e, 
    0x7, 0x28, 0x2, 0x2, 0x16e, 0x18c, 0x5, 0x4e, 0x28, 0x2, 0x16f, 0x171, 
    0x7, 0x29, 0x2, 0x2, 0x170, 0x172, 0x5, 0x4e, 0x28, 0x2, 0x171, 0x170, 
    0x3, 0x2, 0x2, 0x2, 0x171, 0x172, 0x3, 0x2, 0x2, 0x2, 0x172, 0x176, 
    0x3, 0x2, 0x2, 0x2, 0x173, 0x175, 0x5, 0x34, 0x1b, 0x2, 0x174, 0x173, 
    0x3, 0x2, 0x2, 0x2, 0x175, 0x178, 0x3, 0x2, 0x2, 0x2, 0x176, 0x174, 
    0x3, 0x2, 0x2, 0x2, 0x176, 0x177, 0x3, 0x2, 0x2, 0x2, 0x177, 0x179, 
    0x3, 0x2, 0x2, 0x2, 0x178, 0x176, 0x3, 0x2, 0x2, 0x2, 0x179, 0x17d, 
    0x7, 0x9, 0x2, 0x2, 0x17a, 0x17c, 0x5, 0x36, 0x1c, 0x2, 0x17b, 0x17a, 
    0x3, 0x2, 0x2, 0x2, 0x17c, 0x17f, 0x3, 0x2, 0x2, 0x2, 0x17d, 0x17b, 
    0x3, 0x2, 0x2, 0x2, 0x17d, 0x17e, 0x3, 0x2, 0x2, 0x2, 0x17e, 0x180, 
    0x3, 0x2, 0x2, 0x2, 0x17f, 0x17d, 0x3, 0x2, 0x2, 0x2, 0x180, 0x18c, 
    0x7, 0xa, 0x2, 0x2, 0x181, 0x182, 0x7, 0x2a, 0x2, 0x2, 0x182, 0x183, 
    0x5, 0x3c, 0x1f, 0x2, 0x183, 0x184, 0x7, 0xb, 0x2, 0x2, 0x184, 0x185, 
    0x5, 0x42, 0x22, 0x2, 0x185, 0x18c, 0x3, 0x2, 0x2, 0x2, 0x186, 0x187, 
    0x7, 0x2b, 0x2, 0x2, 0x187, 0x188, 0x5, 0x3c, 0x1f, 0x2, 0x188, 0x189, 
    0x7, 0x2c, 0x2, 0x2, 0x189, 0x18a, 0x5, 0x42, 0x22, 0x2, 0x18a, 0x18c, 
    0x3, 0x2, 0x2, 0x2, 0x18b, 0x151, 0x3, 0x2, 0x2, 0x2, 0x18b, 0x153, 
    0x3, 0x2, 0x2, 0x2, 0x18b, 0x15c, 0x3, 0x2, 0x2, 0x2, 0x18b, 0x161, 
    0x3, 0x2, 0x2, 0x2, 0x18b, 0x166, 0x3, 0x2, 0x2, 0x2, 0x18b, 0x16b, 
    0x3, 0x2, 0x2, 0x2, 0x18b, 0x16c, 0x3, 0x2, 0x2, 0x2, 0x18b, 0x16d, 
    0x3, 0x2, 0x2, 0x2, 0x18b, 0x16f, 0x3, 0x2, 0x2, 0x2, 0x18b, 0x181, 
    0x3, 0x2, 0x2, 0x2, 0x18b, 0x186, 0x3, 0x2, 0x2, 0x2, 0x18c, 0x31, 0x3, 
    0x2, 0x2, 0x2, 0x18d, 0x18e, 0x5, 0x4e, 0x28, 0x2, 0x18e, 0x18f, 0x7, 
    0xb, 0x2, 0x2, 0x18f, 0x190, 0x5, 0x24, 0x13, 0x2, 0x190, 0x33, 0x3, 
    0x2, 0x2, 0x2, 0x191, 0x192, 0x9, 0x6, 0x2, 0x2, 0x192, 0x193, 0x5, 
    0x24, 0x13, 0x2, 0x193, 0x35, 0x3, 0x2, 0x2, 0x2, 0x194, 0x198, 0x7, 
    0x2f, 0x2, 0x2, 0x195, 0x197, 0x5, 0x38, 0x1d, 0x2, 0x196, 0x195, 0x3, 
    0x2, 0x2, 0x2, 0x197, 0x19a, 0x3, 0x2, 0x2, 0x2, 0x198, 0x196, 0x3, 
    0x2, 0x2, 0x2, 0x198, 0x199, 0x3, 0x2, 0x2, 0x2, 0x199, 0x37, 0x3, 0x2, 
    0x2, 0x2, 0x19a, 0x198, 0x3, 0x2, 0x2, 0x2, 0x19b, 0x19c, 0x7, 0x30, 
    0x2, 0x2, 0x19c, 0x1bd, 0x5, 0x46, 0x24, 0x2, 0x19d, 0x19e, 0x7, 0x31, 
    0x2, 0x2, 0x19e, 0x1bd, 0x7, 0x3a, 0x2, 0x2, 0x19f, 0x1a0, 0x9, 0x7, 
    0x2, 0x2, 0x1a0, 0x1a1, 0x7, 0xe, 0x2, 0x2, 0x1a1, 0x1a6, 0x5, 0x3a, 
    0x1e, 0x2, 0x1a2, 0x1a3, 0x7, 0x7, 0x2, 0x2, 0x1a3, 0x1a5, 0x5, 0x3a, 
    0x1e, 0x2, 0x1a4, 0x1a2, 0x3, 0x2, 0x2, 0x2, 0x1a5, 0x1a8, 0x3, 0x2, 
    0x2, 0x2, 0x1a6, 0x1a4, 0x3, 0x2, 0x2, 0x2, 0x1a6, 0x1a7, 0x3, 0x2, 
    0x2, 0x2, 0x1a7, 0x1a9, 0x3, 0x2, 0x2, 0x2, 0x1a8, 0x1a6, 0x3, 0x2, 
    0x2, 0x2, 0x1a9, 0x1aa, 0x7, 0xf, 0x2, 0x2, 0x1aa, 0x1bd, 0x3, 0x2, 
    0x2, 0x2, 0x1ab, 0x1ac, 0x7, 0x34, 0x2, 0x2, 0x1ac, 0x1bd, 0x5, 0x3c, 
    0x1f, 0x2, 0x1ad, 0x1ae, 0x7, 0x35, 0x2, 0x2, 0x1ae, 0x1b3, 0x5, 0x3c, 
    0x1f, 0x2, 0x1af, 0x1b0, 0x7, 0x7, 0x2, 0x2, 0x1b0, 0x1b2, 0x5, 0x3c, 
    0x1f, 0x2, 0x1b1, 0x1af, 0x3, 0x2, 0x2, 0x2, 0x1b2, 0x1b5, 0x3, 0x2, 
    0x2, 0x2, 0x1b3, 0x1b1, 0x3, 0x2, 0x2, 0x2, 0x1b3, 0x1b4, 0x3, 0x2, 
    0x2, 0x2, 0x1b4, 0x1bd, 0x3, 0x2, 0x2, 0x2, 0x1b5, 0x1b3, 0x3, 0x2, 
    0x2, 0x2, 0x1b6, 0x1b9, 0x7, 0x24, 0x2, 0x2, 0x1b7, 0x1b8, 0x7, 0x25, 
    0x2, 0x2, 0x1b8, 0x1ba, 0x7, 0x3a, 0x2, 0x2, 0x1b9, 0x1b7, 0x3, 0x2, 
    0x2, 0x2, 0x1b9, 0x1ba, 0x3, 0x2, 0x2, 0x2, 0x1ba, 0x1bd, 0x3, 0x2, 
    0x2, 0x2, 0x1bb, 0x1bd, 0x7, 0x26, 0x2, 0x2, 0x1bc, 0x19b, 0x3, 0x2, 
    0x2, 0x2, 0x1bc, 0x19d, 0x3, 0x2, 0x2, 0x2, 0x1bc, 0x19f, 0x3, 0x2, 
    0x2, 0x2, 0x1bc, 0x1ab, 0x3, 0x2, 0x2, 0x2, 0x1bc, 0x1ad, 0x3, 0x2, 
    0x2, 0x2, 0x1bc, 0x1b6, 0x3, 0x2, 0x2, 0x2, 0x1bc, 0x1bb, 0x3, 0x2, 
    0x2, 0x2, 0x1bd, 0x39, 0x3, 0x2, 0x2, 0x2, 0x1be, 0x1c1, 0x7, 0x3a, 
    0x2, 0x2, 0x1bf, 0x1c1, 0x5, 0x46, 0x24, 0x2, 0x1c0, 0x1be, 0x3, 0x2, 
    0x2, 0x2, 0x1c0, 0x1bf, 0x3, 0x2, 0x2, 0x2, 0x1c1, 0x1c2, 0x3, 0x2, 
    0x2, 0x2, 0x1c2, 0x1c3, 0x7, 0xc, 0x2, 0x2, 0x1c3, 0x1c4, 0x7, 0x3a, 
    0x2, 0x2, 0x1c4, 0x3b, 0x3, 0x2, 0x2, 0x2, 0x1c5, 0x1ca, 0x5, 0x3e, 
    0x20, 0x2, 0x1c6, 0x1c7, 0x7, 0x15, 0x2, 0x2, 0x1c7, 0x1c9, 0x5, 0x3e, 
    0x20, 0x2, 0x1c8, 0x1c6, 0x3, 0x2, 0x2, 0x2, 0x1c9, 0x1cc, 0x3, 0x2, 
    0x2, 0x2, 0x1ca, 0x1c8, 0x3, 0x2, 0x2, 0x2, 0x1ca, 0x1cb, 0x3, 0x2, 
    0x2, 0x2, 0x1cb, 0x3d, 0x3, 0x2, 0x2, 0x2, 0x1cc, 0x1ca, 0x3, 0x2, 0x2, 
    0x2, 0x1cd, 0x1d2, 0x5, 0x4e, 0x28, 0x2, 0x1ce, 0x1cf, 0x7, 0xe, 0x2, 
    0x2, 0x1cf, 0x1d0, 0x5, 0x40, 0x21, 0x2, 0x1d0, 0x1d1, 0x7, 0xf, 0x2, 
    0x2, 0x1d1, 0x1d3, 0x3, 0x2, 0x2, 0x2, 0x1d2, 0x1ce, 0x3, 0x2, 0x2, 
    0x2, 0x1d2, 0x1d3, 0x3, 0x2, 0x2, 0x2, 0x1d3, 0x3f, 0x3, 0x2, 0x2, 0x2, 
    0x1d4, 0x1de, 0x7, 0x3a, 0x2, 0x2, 0x1d5, 0x1de, 0x7, 0x10, 0x2, 0x2, 
    0x1d6, 0x1d8, 0x7, 0x3a, 0x2, 0x2, 0x1d7, 0x1d6, 0x3, 0x2, 0x2, 0x2, 
    0x1d7, 0x1d8, 0x3, 0x2, 0x2, 0x2, 0x1d8, 0x1d9, 0x3, 0x2, 0x2, 0x2, 
    0x1d9, 0x1db, 0x7, 0xc, 0x2, 0x2, 0x1da, 0x1dc, 0x7, 0x3a, 0x2, 0x2, 
    0x1db, 0x1da, 0x3, 0x2, 0x2, 0x2, 0x1db, 0x1dc, 0x3, 0x2, 0x2, 0x2, 
    0x1dc, 0x1de, 0x3, 0x2, 0x2, 0x2, 0x1dd, 0x1d4, 0x3, 0x2, 0x2, 0x2, 
    0x1dd, 0x1d5, 0x3, 0x2, 0x2, 0x2, 0x1dd, 0x1d7, 0x3, 0x2, 0x2, 0x2, 
    0x1de, 0x41, 0x3, 0x2, 0x2, 0x2, 0x1df, 0x1ed, 0x5, 0x44, 0x23, 0x2, 
    0x1e0, 0x1e1, 0x7, 0x9, 0x2, 0x2, 0x1e1, 0x1e6, 0x5, 0x44, 0x23, 0x2, 
    0x1e2, 0x1e3, 0x7, 0x36, 0x2, 0x2, 0x1e3, 0x1e5, 0x5, 0x44, 0x23, 0x2, 
    0x1e4, 0x1e2, 0x3, 0x2, 0x2, 0x2, 0x1e5, 0x1e8, 0x3, 0x2, 0x2, 0x2, 
    0x1e6, 0x1e4, 0x3, 0x2, 0x2, 0x2, 0x1e6, 0x1e7, 0x3, 0x2, 0x2, 0x2, 
    0x1e7, 0x1e9, 0x3, 0x2, 0x2, 0x2, 0x1e8, 0x1e6, 0x3, 0x2, 0x2, 0x2, 
    0x1e9, 0x1ea, 0x7, 0xa, 0x2, 0x2, 0x1ea, 0x1eb, 0x5, 0x4c, 0x27, 0x2, 
    0x1eb, 0x1ed, 0x3, 0x2, 0x2, 0x2, 0x1ec, 0x1df, 0x3, 0x2, 0x2, 0x2, 
    0x1ec, 0x1e0, 0x3, 0x2, 0x2, 0x2, 0x1ed, 0x43, 0x3, 0x2, 0x2, 0x2, 0x1ee, 
    0x1ef, 0x5, 0x46, 0x24, 0x2, 0x1ef, 0x1f0, 0x7, 0xc, 0x2, 0x2, 0x1f0, 
    0x1f5, 0x5, 0x4a, 0x26, 0x2, 0x1f1, 0x1f2, 0x7, 0x37, 0x2, 0x2, 0x1f2, 
    0x1f4, 0x5, 0x4a, 0x26, 0x2, 0x1f3, 0x1f1, 0x3, 0x2, 0x2, 0x2, 0x1f4, 
    0x1f7, 0x3, 0x2, 0x2, 0x2, 0x1f5, 0x1f3, 0x3, 0x2, 0x2, 0x2, 0x1f5, 
    0x1f6, 0x3, 0x2, 0x2, 0x2, 0x1f6, 0x45, 0x3, 0x2, 0x2, 0x2, 0x1f7, 0x1f5, 
    0x3, 0x2, 0x2, 0x2, 0x1f8, 0x1f9, 0x7, 0xe, 0x2, 0x2, 0x1f9, 0x1fe, 
    0x5, 0x48, 0x25, 0x2, 0x1fa, 0x1fb, 0x7, 0x7, 0x2, 0x2, 0x1fb, 0x1fd, 
    0x5, 0x48, 0x25, 0x2, 0x1fc, 0x1fa, 0x3, 0x2, 0x2, 0x2, 0x1fd, 0x200, 
    0x3, 0x2, 0x2, 0x2, 0x1fe, 0x1fc, 0x3, 0x2, 0x2, 0x2, 0x1fe, 0x1ff, 
    0x3, 0x2, 0x2, 0x2, 0x1ff, 0x201, 0x3, 0x2, 0x2, 0x2, 0x200, 0x1fe, 
    0x3, 0x2, 0x2, 0x2, 0x201, 0x202, 0x7, 0xf, 0x2, 0x2, 0x202, 0x47, 0x3, 
    0x2, 0x2, 0x2, 0x203, 0x206, 0x7, 0x3a, 0x2, 0x2, 0x204, 0x205, 0x7, 
    0x38, 0x2, 0x2, 0x205, 0x207, 0x7, 0x3a, 0x2, 0x2, 0x206, 0x204, 0x3, 
    0x2, 0x2, 0x2, 0x206, 0x207, 0x3, 0x2, 0x2, 0x2, 0x207, 0x49, 0x3, 0x2, 
    0x2, 0x2, 0x208, 0x20b, 0x5, 0x4e, 0x28, 0x2, 0x209, 0x20a, 0x7, 0x10, 
    0x2, 0x2, 0x20a, 0x20c, 0x7, 0x3a, 0x2, 0x2, 0x20b, 0x209, 0x3, 0x2, 
    0x2, 0x2, 0x20b, 0x20c, 0x3, 0x2, 0x2, 0x2, 0x20c, 0x4b, 0x3, 0x2, 0x2, 
    0x2, 0x20d, 0x21b, 0x5, 0x4e, 0x28, 0x2, 0x20e, 0x210, 0x7, 0x39, 0x2, 
    0x2, 0x20f, 0x20e, 0x3, 0x2, 0x2, 0x2, 0x20f, 0x210, 0x3, 0x2, 0x2, 
    0x2, 0x210, 0x211, 0x3, 0x2, 0x2, 0x2, 0x211, 0x212, 0x7, 0xe, 0x2, 
    0x2, 0x212, 0x217, 0x7, 0x3a, 0x2, 0x2, 0x213, 0x214, 0x7, 0x7, 0x2, 
    0x2, 0x214, 0x216, 0x7, 0x3a, 0x2, 0x2, 0x215, 0x213, 0x3, 0x2, 0x2, 
    0x2, 0x216, 0x219, 0x3, 0x2, 0x2, 0x2, 0x217, 0x215, 0x3, 0x2, 0x2, 
    0x2, 0x217, 0x218, 0x3, 0x2, 0x2, 0x2, 0x218, 0x21a, 0x3, 0x2, 0x2, 
    0x2, 0x219, 0x217, 0x3, 0x2, 0x2, 0x2, 0x21a, 0x21c, 0x7, 0xf, 0x2, 
    0x2, 0x21b, 0x20f, 0x3, 0x2, 0x2, 0x2, 0x21b, 0x21c, 0x3, 0x2, 0x2, 
    0x2, 0x21c, 0x4d, 0x3, 0x2, 0x2, 0x2, 0x21d, 0x21e, 0x9, 0x8, 0x2, 0x2, 
    0x21e, 0x4f, 0x3, 0x2, 0x2, 0x2, 0x42, 0x53, 0x59, 0x64, 0x6e, 0x72, 
    0x74, 0x7b, 0x8b, 0x91, 0x97, 0x9d, 0xa1, 0xaa, 0xb9, 0xbc, 0xc1, 0xcc, 
    0xcf, 0xd5, 0xdc, 0xe4, 0xf6, 0xfe, 0x110, 0x112, 0x117, 0x11b, 0x11d, 
    0x124, 0x128, 0x130, 0x134, 0x136, 0x13d, 0x146, 0x14c, 0x159, 0x15f, 
    0x164, 0x169, 0x171, 0x176, 0x17d, 0x18b, 0x198, 0x1a6, 0x1b3, 0x1b9, 
    0x1bc, 0x1c0, 0x1ca, 0x1d2, 0x1d7, 0x1db, 0x1dd, 0x1e6, 0x1ec, 0x1f5, 
    0x1fe, 0x206, 0x20b, 0x20f, 0x217, 0x21b, 
  };

  atn::ATNDeserializer deserializer;
  _atn = deserializer.deserialize(_serializedATN);

  size_t count = _atn.getNumberOfDecisions();
  _decisionToDFA.reserve(count);
  for (size_t i = 0; i < count; i++) { 
    _decisionToDFA.emplace_back(_atn.getDecisionState(i), i);
  }
}

HspmdParser::Initializer HspmdParser::_init;
