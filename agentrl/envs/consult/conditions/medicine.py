"""Internal medicine conditions: heart, lungs, glands, blood and kidneys (see ``schema.Condition``)."""

from __future__ import annotations

from agentrl.envs.consult.conditions.schema import Condition

_FOLLOW_UP = ("follow-up", "follow up", "review", "return if", "come back")

CONDITIONS = (
    # ------------------------------------------------------------------ cardiology
    Condition(
        key="acute_coronary_syndrome",
        name="acute myocardial infarction",
        synonyms=(
            "heart attack",
            "MI",
            "acute coronary syndrome",
            "ACS",
            "NSTEMI",
            "STEMI",
            "myocardial infarction",
        ),
        specialty="cardiology",
        complaint="a crushing pain in my chest",
        hpi={
            "onset": (
                "It came on about an hour ago while I was sitting watching TV.",
                "It started suddenly about two hours ago.",
            ),
            "character": (
                "It's a heavy, crushing pressure, like a weight on me.",
                "It feels like a tight band squeezing.",
            ),
            "location": ("It's right in the middle, behind my breastbone.",),
            "radiation": ("It goes down my left arm and up into my jaw.", "It spreads into my left arm."),
            "severity": ("It's nine out of ten.", "About eight out of ten, the worst I've ever had."),
            "timing": ("It hasn't let up at all since it started.",),
            "relieving": ("Sitting still and resting hasn't made any difference.",),
        },
        symptoms={
            "chest_pain": ("The pain in my chest is still there now.",),
            "nausea": ("I feel sick.", "I feel queasy."),
            "shortness_of_breath": ("I'm a bit out of breath.",),
        },
        optional_symptoms={
            "vomiting": ("I've been sick once.",),
            "dizziness": ("I feel lightheaded.",),
            "anxiety": ("I've got a horrible feeling that something bad is happening.",),
        },
        history={
            "smoking": ("I smoke about twenty a day.", "I've smoked a pack a day for thirty years."),
            "past_medical_history": ("I have high blood pressure and high cholesterol.",),
            "medications": ("I take amlodipine for my blood pressure, but I stopped my cholesterol tablets.",),
            "family_history": ("My father had stents put in his heart when he was fifty-five.",),
        },
        tests={
            "vital_signs": (
                "Temperature 36.8 C, heart rate 102/min, blood pressure 158/94 mmHg, respiratory rate 20/min, "
                "SpO2 96% on room air."
            ),
            "cardiac_exam": "Pale and sweaty; heart sounds I and II normal, no murmurs; JVP not raised; chest clear.",
            "ecg": (
                "Sinus tachycardia 102/min; 3 mm ST elevation in leads II, III and aVF with reciprocal "
                "ST depression in I and aVL."
            ),
            "troponin": "High-sensitivity troponin 2450 ng/L (markedly raised).",
            "lipids": "Total cholesterol 6.8 mmol/L, LDL 4.6 mmol/L, HDL 0.9 mmol/L.",
        },
        key_questions=("onset", "character", "radiation", "smoking", "past_medical_history"),
        red_flags=("syncope", "shortness_of_breath"),
        key_tests=("ecg", "troponin", "vital_signs"),
        plan=(
            ("aspirin",),
            (
                "emergency",
                "ambulance",
                "999",
                "cardiology",
                "angiography",
                "angioplasty",
                "pci",
                "cath lab",
                "catheter lab",
            ),
        ),
        harmful=(("send you home", "go home and rest", "wait and see"),),
        differential=(
            "stable angina",
            "pulmonary embolism",
            "aortic dissection",
            "pericarditis",
            "gastro-oesophageal reflux",
        ),
        ages=(40, 90),
    ),
    Condition(
        key="stable_angina",
        name="stable angina",
        synonyms=("angina", "angina pectoris", "chronic coronary syndrome", "exertional angina"),
        specialty="cardiology",
        complaint="a tight chest when I walk uphill",
        hpi={
            "onset": ("It started about two months ago.", "I first noticed it around six weeks ago."),
            "character": ("It's a tight, heavy feeling.", "It feels like a pressure or a squeeze."),
            "location": ("It's in the centre of my chest.",),
            "radiation": ("Sometimes it goes into my left shoulder.", "It can spread up into my throat."),
            "aggravating": (
                "It comes on when I walk uphill or hurry for the bus.",
                "Climbing two flights of stairs brings it on, especially in the cold.",
            ),
            "relieving": ("It goes away within five minutes if I stop and rest.",),
            "timing": ("It only lasts a few minutes and it never comes on when I'm sitting still.",),
        },
        symptoms={
            "chest_pain": ("I get a tight pain in my chest.",),
            "shortness_of_breath": ("I get a bit puffed at the same time.",),
        },
        optional_symptoms={
            "fatigue": ("I get tired more easily than I used to.",),
        },
        history={
            "smoking": ("I smoked for twenty-five years and quit last year.", "I still smoke ten a day."),
            "past_medical_history": ("I have high blood pressure and high cholesterol.",),
            "medications": ("I take ramipril for my blood pressure.",),
            "family_history": ("My brother had a heart bypass at sixty.",),
        },
        tests={
            "vital_signs": (
                "Temperature 36.7 C, heart rate 78/min, blood pressure 148/90 mmHg, respiratory rate 14/min, "
                "SpO2 98% on room air."
            ),
            "ecg": "Sinus rhythm 76/min; T-wave flattening in V5-V6; no acute ST changes.",
            "lipids": "Total cholesterol 6.9 mmol/L, LDL 4.8 mmol/L, HDL 0.9 mmol/L.",
        },
        key_questions=("character", "aggravating", "relieving", "smoking", "family_history"),
        red_flags=("timing", "syncope"),
        key_tests=("ecg", "lipids"),
        plan=(
            ("gtn", "glyceryl trinitrate", "nitrate spray", "nitroglycerin"),
            ("statin", "atorvastatin", "aspirin"),
            ("cardiology", "chest pain clinic", "999", "ambulance", "follow-up", "follow up", "review"),
        ),
        differential=(
            "acute coronary syndrome",
            "gastro-oesophageal reflux",
            "musculoskeletal chest pain",
            "aortic stenosis",
            "anaemia",
        ),
        ages=(45, 85),
    ),
    Condition(
        key="atrial_fibrillation",
        name="atrial fibrillation",
        synonyms=("AF", "AFib", "fast AF", "atrial fibrillation with rapid ventricular response"),
        specialty="cardiology",
        complaint="my heart racing and fluttering",
        hpi={
            "onset": ("It started yesterday evening.", "It came on suddenly about twelve hours ago."),
            "character": (
                "It feels like my heart is fluttering and jumping all over the place.",
                "It's fast and uneven, like a drum being played out of time.",
            ),
            "timing": ("It hasn't stopped since it started.",),
            "prior_episodes": ("I've had a few shorter spells over the past months that settled on their own.",),
            "aggravating": ("Walking around makes it feel worse.",),
        },
        symptoms={
            "palpitations": ("I can feel my heart thumping unevenly.",),
            "shortness_of_breath": ("I get breathless walking across the room.",),
            "fatigue": ("I feel drained.",),
        },
        optional_symptoms={
            "dizziness": ("I feel a bit lightheaded at times.",),
            "chest_pain": ("I have a mild ache in my chest.",),
            "anxiety": ("I feel on edge and panicky.",),
        },
        history={
            "alcohol": (
                "I drank far more than usual at a wedding this weekend.",
                "I drink about four pints most nights, more at weekends.",
            ),
            "past_medical_history": ("I have high blood pressure.",),
            "medications": ("I take amlodipine for my blood pressure.",),
        },
        sensitive=("alcohol",),
        tests={
            "vital_signs": (
                "Temperature 36.8 C, heart rate 138/min irregularly irregular, blood pressure 132/84 mmHg, "
                "respiratory rate 18/min, SpO2 97% on room air."
            ),
            "cardiac_exam": "Irregularly irregular pulse with an apex-radial deficit; no murmurs; JVP not raised.",
            "ecg": "Atrial fibrillation with a ventricular rate of 135/min; no P waves; narrow QRS; no ST changes.",
            "echocardiogram": "Mildly dilated left atrium; ejection fraction 55%; no significant valve disease.",
        },
        key_questions=("onset", "palpitations", "alcohol", "past_medical_history"),
        red_flags=("syncope", "chest_pain", "weakness_numbness"),
        key_tests=("ecg", "vital_signs", "cardiac_exam"),
        plan=(
            ("rate control", "bisoprolol", "beta blocker", "beta-blocker", "diltiazem", "metoprolol", "cardioversion"),
            (
                "anticoagulation",
                "anticoagulant",
                "apixaban",
                "rivaroxaban",
                "edoxaban",
                "dabigatran",
                "warfarin",
                "cha2ds2-vasc",
                "chads",
            ),
            ("alcohol", "follow-up", "follow up", "review"),
        ),
        differential=(
            "atrial flutter",
            "supraventricular tachycardia",
            "hyperthyroidism",
            "sinus tachycardia",
            "panic attack",
        ),
        ages=(50, 90),
    ),
    Condition(
        key="heart_failure",
        name="acute decompensated heart failure",
        synonyms=(
            "heart failure",
            "congestive heart failure",
            "CHF",
            "congestive cardiac failure",
            "CCF",
            "left ventricular failure",
            "LVF",
            "decompensated heart failure",
            "acute heart failure",
        ),
        specialty="cardiology",
        complaint="getting more and more breathless",
        hpi={
            "onset": ("It's been building up over the last two weeks.", "It has crept up over about ten days."),
            "aggravating": ("Even walking to the bathroom leaves me gasping.",),
            "timing": ("It's getting worse every day.",),
            "severity": ("Now I can barely manage a few steps.",),
            "prior_episodes": ("Nothing this bad has happened to me before.",),
        },
        symptoms={
            "shortness_of_breath": ("I'm out of breath doing the smallest thing.",),
            "orthopnea": (
                "I have to sleep propped up on four pillows.",
                "I wake up at night gasping and have to sit on the edge of the bed.",
            ),
            "leg_swelling": (
                "My ankles and legs are really puffy.",
                "My shoes don't fit because my feet are so swollen.",
            ),
            "fatigue": ("I'm worn out all the time.",),
        },
        optional_symptoms={
            "cough": ("I've got a dry cough, mostly at night.",),
            "weight_change": ("I've put on about four kilos in two weeks.",),
        },
        history={
            "past_medical_history": (
                "I had a heart attack five years ago.",
                "I had a heart attack four years ago and I have high blood pressure.",
            ),
            "medications": ("I take ramipril, bisoprolol and a water tablet, but I've been missing doses.",),
            "smoking": ("I used to smoke but stopped ten years ago.",),
        },
        tests={
            "vital_signs": (
                "Temperature 36.6 C, heart rate 104/min, blood pressure 150/90 mmHg, respiratory rate 26/min, "
                "SpO2 90% on room air."
            ),
            "cardiac_exam": "JVP raised 6 cm; third heart sound; pitting oedema to both knees.",
            "respiratory_exam": "Fine bibasal crackles to the mid zones; dull to percussion at both bases.",
            "chest_xray": "Cardiomegaly, upper lobe venous diversion, Kerley B lines and small bilateral effusions.",
            "bnp": "NT-proBNP 6800 pg/mL (markedly raised).",
            "echocardiogram": "Dilated left ventricle with ejection fraction 30%; anterior wall hypokinesia.",
            "electrolytes": "Sodium 133, potassium 4.8 mmol/L, urea 11.2 mmol/L, creatinine 128 umol/L.",
        },
        key_questions=("onset", "orthopnea", "leg_swelling", "medications", "past_medical_history"),
        red_flags=("chest_pain", "syncope"),
        key_tests=("bnp", "chest_xray", "echocardiogram", "vital_signs"),
        plan=(
            ("diuretic", "furosemide", "frusemide", "water tablet", "bumetanide"),
            ("hospital", "admit", "admission", "oxygen"),
            ("daily weight", "weigh yourself", "heart failure nurse", "follow-up", "follow up", "review"),
        ),
        harmful=(("ibuprofen", "naproxen", "nsaid", "anti-inflammatory"), ("verapamil",)),
        differential=(
            "pneumonia",
            "COPD exacerbation",
            "pulmonary embolism",
            "nephrotic syndrome",
            "acute coronary syndrome",
        ),
        ages=(55, 92),
    ),
    # ------------------------------------------------------------------ venous thromboembolism
    Condition(
        key="pulmonary_embolism",
        name="pulmonary embolism",
        synonyms=("PE", "pulmonary embolus", "blood clot in the lung", "clot on the lung", "pulmonary thromboembolism"),
        specialty="respiratory medicine",
        complaint="a sharp chest pain and getting out of breath",
        hpi={
            "onset": ("It came on suddenly this morning.", "It started all of a sudden yesterday afternoon."),
            "character": ("The pain is sharp and stabbing.",),
            "location": ("It's on the right side of my chest.",),
            "aggravating": ("It catches when I take a deep breath in.",),
            "timing": ("It's been there constantly since it began.",),
        },
        symptoms={
            "shortness_of_breath": ("I can't catch my breath, even sitting still.",),
            "chest_pain": ("My chest hurts.",),
            "palpitations": ("My heart is racing.",),
        },
        optional_symptoms={
            "hemoptysis": ("I coughed up a little blood-streaked spit.",),
            "cough": ("I've had a slight dry cough.",),
            "dizziness": ("I felt lightheaded when I stood up.",),
        },
        history={
            "surgeries": ("I had an operation on my knee three weeks ago.",),
            "travel": ("I flew back from Australia last week.",),
            "past_medical_history": ("I'm normally fit and well.",),
        },
        tests={
            "vital_signs": (
                "Temperature 37.6 C, heart rate 118/min, blood pressure 112/70 mmHg, respiratory rate 26/min, "
                "SpO2 91% on room air."
            ),
            "ecg": "Sinus tachycardia 118/min; S1Q3T3 pattern; T-wave inversion in V1-V3.",
            "d_dimer": "D-dimer 3.8 mg/L (raised).",
            "ctpa": "Filling defects in the right lower lobe segmental pulmonary arteries; no right heart strain.",
            "abg": "pH 7.48, pCO2 3.9 kPa, pO2 8.4 kPa, HCO3 23 mmol/L, lactate 1.4 mmol/L.",
        },
        key_questions=("onset", "shortness_of_breath", "surgeries", "travel", "leg_swelling"),
        red_flags=("hemoptysis", "syncope"),
        key_tests=("vital_signs", "d_dimer", "ctpa", "ecg"),
        plan=(
            ("anticoagulation", "anticoagulant", "apixaban", "rivaroxaban", "heparin", "enoxaparin", "dalteparin"),
            _FOLLOW_UP,
        ),
        harmful=(("send you home", "go home and rest"),),
        differential=(
            "pneumonia",
            "pneumothorax",
            "acute coronary syndrome",
            "pericarditis",
            "musculoskeletal chest pain",
        ),
        ages=(25, 80),
    ),
    Condition(
        key="deep_vein_thrombosis",
        name="deep vein thrombosis",
        synonyms=("DVT", "blood clot in the leg", "clot in the leg", "venous thromboembolism", "VTE"),
        specialty="general medicine",
        complaint="a swollen, painful left leg",
        hpi={
            "onset": ("It started three days ago.", "I noticed it about four days ago."),
            "character": ("It's a tight, heavy ache.",),
            "location": ("It's in my left calf.",),
            "aggravating": ("Walking and standing make it worse.",),
            "timing": ("It's been getting gradually worse.",),
        },
        symptoms={
            "leg_swelling": ("My left calf is much bigger than the right.",),
            "rash": ("The skin over my calf looks red and feels warm.",),
        },
        optional_symptoms={
            "muscle_aches": ("My calf muscle feels sore when I press on it.",),
        },
        history={
            "travel": ("I got back from a long-haul flight from Thailand last week.",),
            "past_medical_history": ("I've no major health problems.",),
            "family_history": ("My mother had a clot in her lung when she was fifty.",),
        },
        tests={
            "vital_signs": (
                "Temperature 37.4 C, heart rate 92/min, blood pressure 128/80 mmHg, respiratory rate 14/min, "
                "SpO2 98% on room air."
            ),
            "leg_exam": (
                "Left calf swollen, 4 cm larger in circumference than the right; pitting oedema; warm; "
                "tender along the deep veins."
            ),
            "d_dimer": "D-dimer 2.6 mg/L (raised).",
            "leg_doppler": "Non-compressible left popliteal and femoral veins containing thrombus.",
        },
        key_questions=("onset", "travel", "surgeries", "family_history"),
        red_flags=("shortness_of_breath", "chest_pain", "hemoptysis"),
        key_tests=("leg_exam", "d_dimer", "leg_doppler"),
        plan=(
            ("anticoagulation", "anticoagulant", "apixaban", "rivaroxaban", "heparin", "enoxaparin", "dalteparin"),
            (*_FOLLOW_UP, "breathless", "chest pain"),
        ),
        harmful=(("massage the calf", "massage your calf", "rub the calf"),),
        differential=("cellulitis", "ruptured Baker's cyst", "calf muscle tear", "superficial thrombophlebitis"),
        ages=(20, 85),
    ),
    # ------------------------------------------------------------------ respiratory
    Condition(
        key="asthma_exacerbation",
        name="acute asthma exacerbation",
        synonyms=("asthma attack", "asthma exacerbation", "acute asthma", "exacerbation of asthma"),
        specialty="respiratory medicine",
        complaint="a tight chest and I can't get my breath",
        hpi={
            "onset": ("It got bad over the last two days.", "It's been building since yesterday."),
            "aggravating": ("Cold air and climbing the stairs make it worse.",),
            "relieving": ("My blue inhaler helps for about an hour, then it's back.",),
            "timing": ("It's worse at night and first thing in the morning.",),
            "severity": ("I can only say a few words before I need another breath.",),
            "prior_episodes": ("I was in hospital with my chest like this two years ago.",),
        },
        symptoms={
            "wheezing": ("I'm wheezing a lot.",),
            "shortness_of_breath": ("I'm really short of breath.",),
            "cough": ("I've got a dry cough.",),
        },
        optional_symptoms={
            "chest_pain": ("My chest feels tight.",),
            "runny_nose": ("I've had a runny nose for a few days.",),
        },
        history={
            "past_medical_history": ("I've had asthma since I was a child.",),
            "medications": (
                "I have a brown preventer inhaler, but I haven't been using it regularly.",
                "I use a preventer inhaler twice a day and a blue one when I need it.",
            ),
            "smoking": ("I've never smoked.",),
            "allergies": ("I'm allergic to cats; no allergies to medicines.",),
        },
        tests={
            "vital_signs": (
                "Temperature 37.2 C, heart rate 116/min, blood pressure 126/78 mmHg, respiratory rate 26/min, "
                "SpO2 94% on room air."
            ),
            "respiratory_exam": (
                "Widespread expiratory wheeze; prolonged expiration; using accessory muscles; "
                "speaking in short phrases."
            ),
            "peak_flow": "Peak flow 210 L/min (45% of best).",
        },
        key_questions=("onset", "medications", "prior_episodes", "wheezing"),
        red_flags=("confusion",),
        key_tests=("peak_flow", "vital_signs", "respiratory_exam"),
        plan=(
            ("salbutamol", "bronchodilator", "reliever", "nebuliser", "nebulizer", "ipratropium"),
            ("prednisolone", "steroid", "corticosteroid"),
            ("asthma action plan", "inhaler technique", *_FOLLOW_UP),
        ),
        harmful=(("beta blocker", "beta-blocker", "propranolol"), ("sedative", "sleeping tablet", "diazepam")),
        differential=("COPD exacerbation", "pneumonia", "pneumothorax", "anaphylaxis", "vocal cord dysfunction"),
        ages=(16, 60),
    ),
    Condition(
        key="copd_exacerbation",
        name="acute exacerbation of COPD",
        synonyms=(
            "COPD exacerbation",
            "AECOPD",
            "infective exacerbation of COPD",
            "exacerbation of COPD",
            "acute exacerbation of chronic obstructive pulmonary disease",
        ),
        specialty="respiratory medicine",
        complaint="my chest has got much worse and I'm bringing up more phlegm",
        hpi={
            "onset": ("It's been worse for the last four days.", "It started going downhill five days ago."),
            "timing": ("It's getting worse day by day.",),
            "severity": ("I can't walk to the end of the garden now without stopping.",),
            "prior_episodes": ("I get bad spells like this a couple of times every winter.",),
            "relieving": ("My inhalers aren't helping as much as usual.",),
        },
        symptoms={
            "shortness_of_breath": ("I'm much more breathless than my usual.",),
            "cough": ("My cough is much worse.",),
            "sputum": ("My phlegm has gone thick and green, and there's more of it.",),
            "wheezing": ("My chest is wheezy.",),
        },
        optional_symptoms={
            "fever": ("I've felt a bit hot and cold.",),
            "fatigue": ("I'm exhausted.",),
            "runny_nose": ("I had a runny nose last week.",),
        },
        history={
            "smoking": ("I've smoked twenty a day for forty years.", "I still smoke about fifteen a day."),
            "past_medical_history": ("I was told I had COPD about eight years ago.",),
            "medications": ("I use a green inhaler every day and a blue one when I need it.",),
        },
        tests={
            "vital_signs": (
                "Temperature 37.8 C, heart rate 104/min, blood pressure 138/82 mmHg, respiratory rate 24/min, "
                "SpO2 88% on room air."
            ),
            "respiratory_exam": (
                "Hyperexpanded chest; pursed-lip breathing; reduced air entry throughout; widespread expiratory "
                "wheeze and coarse crackles."
            ),
            "chest_xray": "Hyperinflated lungs with flattened diaphragms; no consolidation or pneumothorax.",
            "abg": "pH 7.34, pCO2 6.9 kPa, pO2 7.8 kPa, HCO3 29 mmol/L, lactate 1.1 mmol/L.",
            "cbc": "White cells 12.4 x10^9/L; haemoglobin 162 g/L; platelets 280 x10^9/L.",
            "crp": "CRP 48 mg/L.",
        },
        key_questions=("sputum", "smoking", "shortness_of_breath", "medications"),
        red_flags=("confusion", "hemoptysis", "weight_change"),
        key_tests=("vital_signs", "chest_xray", "abg"),
        plan=(
            ("salbutamol", "bronchodilator", "nebuliser", "nebulizer", "ipratropium", "inhaler"),
            ("prednisolone", "steroid", "antibiotic", "amoxicillin", "doxycycline"),
            ("stop smoking", "smoking cessation", "quit smoking", "follow-up", "follow up", "review"),
        ),
        harmful=(("high-flow oxygen", "high flow oxygen", "15 litres"), ("sedative", "sleeping tablet", "diazepam")),
        differential=("pneumonia", "heart failure", "pneumothorax", "pulmonary embolism", "lung cancer"),
        ages=(50, 90),
    ),
    Condition(
        key="spontaneous_pneumothorax",
        name="spontaneous pneumothorax",
        synonyms=("pneumothorax", "primary spontaneous pneumothorax", "collapsed lung", "PTX"),
        specialty="respiratory medicine",
        complaint="a sudden sharp pain in my chest and I'm short of breath",
        hpi={
            "onset": ("It came on suddenly about three hours ago while I was sitting at my desk.",),
            "character": ("It's a sharp, stabbing pain.",),
            "location": ("It's on the left side of my chest.",),
            "radiation": ("It goes through to my left shoulder blade.",),
            "aggravating": ("It's worse when I breathe in deeply.",),
            "prior_episodes": ("Nothing like this has happened before.",),
        },
        symptoms={
            "chest_pain": ("My chest hurts on one side.",),
            "shortness_of_breath": ("I feel short of breath.",),
        },
        optional_symptoms={
            "cough": ("I've got a little dry cough.",),
            "anxiety": ("I'm quite scared.",),
        },
        history={
            "smoking": ("I smoke about ten cigarettes a day.",),
            "recreational_drugs": ("I smoke cannabis most evenings.", "I smoke weed most weekends."),
        },
        sensitive=("recreational_drugs",),
        tests={
            "vital_signs": (
                "Temperature 36.7 C, heart rate 104/min, blood pressure 124/78 mmHg, respiratory rate 22/min, "
                "SpO2 95% on room air."
            ),
            "respiratory_exam": (
                "Reduced expansion, hyper-resonant percussion and absent breath sounds on the left; trachea central."
            ),
            "chest_xray": "Left-sided pneumothorax with a 3 cm rim at the level of the hilum; no mediastinal shift.",
        },
        key_questions=("onset", "smoking", "prior_episodes", "shortness_of_breath"),
        red_flags=("syncope", "dizziness"),
        key_tests=("chest_xray", "respiratory_exam", "vital_signs"),
        plan=(
            ("chest drain", "aspiration", "aspirate", "respiratory team", "admit", "hospital", "ambulatory"),
            ("stop smoking", "smoking cessation", "quit smoking", "avoid flying", "no flying", "avoid diving"),
            ("repeat x-ray", "repeat xray", "repeat chest x-ray", *_FOLLOW_UP),
        ),
        differential=(
            "pulmonary embolism",
            "pneumonia",
            "musculoskeletal chest pain",
            "pericarditis",
            "acute coronary syndrome",
        ),
        ages=(16, 40),
    ),
    Condition(
        key="acute_bronchitis",
        name="acute bronchitis",
        synonyms=("bronchitis", "chest infection", "acute viral bronchitis"),
        specialty="general practice",
        complaint="a cough that won't go away",
        hpi={
            "onset": ("It started about ten days ago.", "I've had it for nearly two weeks."),
            "character": ("It's a hacking, chesty cough.",),
            "timing": ("It's worse at night but slowly getting better.",),
            "aggravating": ("Talking a lot and cold air set it off.",),
            "relieving": ("Honey and lemon drinks soothe it a bit.",),
        },
        symptoms={
            "cough": ("I keep coughing.",),
            "sputum": ("I bring up some clear or yellowish phlegm.",),
        },
        optional_symptoms={
            "runny_nose": ("I had a runny nose at the start.",),
            "sore_throat": ("My throat is a bit raw.",),
            "fever": ("I had a slight temperature for the first couple of days.",),
            "chest_pain": ("My chest feels sore from all the coughing.",),
        },
        history={
            "smoking": ("I've never smoked.", "I smoke a few cigarettes at weekends."),
            "sick_contacts": ("Half my office has had the same thing.",),
        },
        tests={
            "vital_signs": (
                "Temperature 37.5 C, heart rate 86/min, blood pressure 124/78 mmHg, respiratory rate 16/min, "
                "SpO2 97% on room air."
            ),
            "respiratory_exam": "Scattered wheeze and a few coarse crackles that clear on coughing; no focal signs.",
            "crp": "CRP 14 mg/L.",
        },
        key_questions=("onset", "sputum", "smoking", "fever"),
        red_flags=("hemoptysis", "shortness_of_breath", "weight_change"),
        key_tests=("vital_signs", "respiratory_exam"),
        plan=(
            ("fluids", "plenty of rest", "paracetamol", "honey", "self-care", "self care"),
            ("three weeks", "3 weeks", *_FOLLOW_UP),
        ),
        differential=("community-acquired pneumonia", "asthma", "post-nasal drip", "whooping cough", "COPD"),
        ages=(18, 75),
    ),
    Condition(
        key="influenza",
        name="influenza",
        synonyms=("flu", "influenza A", "influenza B", "seasonal influenza", "influenza-like illness"),
        specialty="general practice",
        complaint="a high temperature and aching all over",
        hpi={
            "onset": ("It hit me suddenly yesterday afternoon.", "It came on very quickly two days ago."),
            "character": ("I feel like I've been hit by a bus.",),
            "severity": ("I've been too unwell to get out of bed.",),
            "relieving": ("Paracetamol helps for a few hours.",),
        },
        symptoms={
            "fever": ("I've had a high temperature, over 39.", "I've been burning up and shivering."),
            "muscle_aches": ("Every muscle in my body aches.",),
            "cough": ("I have a dry cough.",),
            "headache": ("I've got a pounding headache.",),
            "fatigue": ("I'm completely wiped out.",),
        },
        optional_symptoms={
            "sore_throat": ("My throat is sore.",),
            "runny_nose": ("My nose is running.",),
            "appetite": ("I've no appetite at all.",),
        },
        history={
            "sick_contacts": ("My kids have all had the same thing this week.", "Lots of people at work are off sick."),
            "past_medical_history": ("I'm normally fit and healthy.",),
        },
        tests={
            "vital_signs": (
                "Temperature 39.2 C, heart rate 106/min, blood pressure 118/74 mmHg, respiratory rate 18/min, "
                "SpO2 97% on room air."
            ),
            "throat_exam": "Mildly red pharynx; no tonsillar exudate; no cervical lymphadenopathy.",
            "viral_swab": "Influenza A RNA detected; RSV and SARS-CoV-2 not detected.",
        },
        key_questions=("onset", "fever", "muscle_aches", "sick_contacts"),
        red_flags=("shortness_of_breath", "chest_pain", "confusion"),
        key_tests=("vital_signs", "viral_swab"),
        plan=(
            ("fluids", "paracetamol", "ibuprofen", "plenty of rest", "self-care", "self care"),
            ("stay at home", "stay off work", "avoid contact", "isolate", "oseltamivir", "antiviral"),
            _FOLLOW_UP,
        ),
        differential=("COVID-19", "common cold", "community-acquired pneumonia", "acute bronchitis", "glandular fever"),
        ages=(16, 70),
    ),
    Condition(
        key="pulmonary_tuberculosis",
        name="pulmonary tuberculosis",
        synonyms=("tuberculosis", "TB", "pulmonary TB", "active tuberculosis", "consumption"),
        specialty="infectious diseases",
        complaint="a cough that's gone on for weeks and I'm losing weight",
        hpi={
            "onset": ("It started about two months ago.", "I've had it for nearly three months now."),
            "timing": ("It's there every day and slowly getting worse.",),
            "character": ("It's a deep, nagging cough.",),
            "relieving": ("Cough mixtures haven't helped at all.",),
        },
        symptoms={
            "cough": ("I'm coughing all the time.",),
            "sputum": ("I bring up yellow phlegm.",),
            "night_sweats": ("I wake up drenched in sweat most nights.",),
            "weight_change": ("I've lost about eight kilos without trying.",),
            "fever": ("I get feverish in the evenings.",),
        },
        optional_symptoms={
            "hemoptysis": ("I've coughed up streaks of blood a few times.",),
            "fatigue": ("I'm tired all the time.",),
            "appetite": ("I don't feel like eating.",),
        },
        history={
            "travel": (
                "I spent six months with family in Pakistan last year.",
                "I lived in Bangladesh until three years ago.",
            ),
            "sick_contacts": ("My uncle, who I stayed with, had a bad cough for months.",),
            "recreational_drugs": ("I used to inject heroin, but I'm on methadone now.", "I smoke crack now and then."),
        },
        sensitive=("recreational_drugs",),
        tests={
            "vital_signs": (
                "Temperature 37.9 C, heart rate 96/min, blood pressure 116/72 mmHg, respiratory rate 18/min, "
                "SpO2 96% on room air."
            ),
            "general_exam": "Thin and pale; BMI 18; no jaundice or cyanosis.",
            "respiratory_exam": "Crackles and bronchial breathing over the right upper zone.",
            "chest_xray": "Right upper lobe consolidation with cavitation; right hilar lymphadenopathy.",
            "cbc": "Haemoglobin 112 g/L, white cells 9.8 x10^9/L with lymphopenia, platelets 410 x10^9/L.",
            "crp": "CRP 62 mg/L, ESR 78 mm/h.",
        },
        key_questions=("onset", "travel", "sick_contacts", "recreational_drugs"),
        red_flags=("hemoptysis", "weight_change", "night_sweats"),
        key_tests=("chest_xray", "vital_signs", "respiratory_exam"),
        plan=(
            ("sputum", "acid-fast", "afb", "sputum culture", "sputum smear", "tb pcr", "genexpert"),
            (
                "tb clinic",
                "tb service",
                "tb team",
                "respiratory team",
                "isolation",
                "isolate",
                "public health",
                "contact tracing",
                "rifampicin",
                "isoniazid",
            ),
            ("hiv test", "hiv testing", "hiv screen"),
        ),
        harmful=(("levofloxacin", "moxifloxacin", "ciprofloxacin", "fluoroquinolone"),),
        differential=("lung cancer", "community-acquired pneumonia", "sarcoidosis", "lymphoma", "bronchiectasis"),
        ages=(18, 70),
    ),
    # ------------------------------------------------------------------ endocrinology
    Condition(
        key="type_2_diabetes",
        name="type 2 diabetes mellitus",
        synonyms=(
            "type 2 diabetes",
            "diabetes",
            "diabetes mellitus",
            "T2DM",
            "type II diabetes",
            "non-insulin-dependent diabetes",
        ),
        specialty="endocrinology",
        complaint="being thirsty all the time and going to the toilet a lot",
        hpi={
            "onset": ("It's been creeping up over the last three months.", "I first noticed it about two months ago."),
            "timing": ("It's there every day and seems to be getting worse.",),
            "prior_episodes": ("I've never had anything like this before.",),
        },
        symptoms={
            "thirst": ("I'm drinking litres of water and I'm still thirsty.",),
            "urinary_symptoms": ("I'm peeing much more than usual, even getting up in the night.",),
            "fatigue": ("I feel tired all the time.",),
        },
        optional_symptoms={
            "vision_changes": ("My eyesight has gone a bit blurry.",),
            "weight_change": ("I've lost a few kilos without trying.",),
            "itching": ("My skin has been itchy.",),
        },
        history={
            "family_history": ("My mum and her sister both take tablets for high blood sugar.",),
            "past_medical_history": ("I have high blood pressure and I'm overweight.",),
            "medications": ("I take ramipril for my blood pressure.",),
        },
        tests={
            "vital_signs": (
                "Temperature 36.8 C, heart rate 80/min, blood pressure 146/92 mmHg, respiratory rate 14/min, "
                "SpO2 98% on room air; BMI 33."
            ),
            "glucose": "Random blood glucose 15.6 mmol/L.",
            "hba1c": "HbA1c 68 mmol/mol (8.4%).",
            "urinalysis": "Urine dipstick: glucose 3+; no ketones, protein, leukocytes or nitrites.",
            "lipids": "Total cholesterol 5.9 mmol/L, LDL 3.8 mmol/L, HDL 0.9 mmol/L, triglycerides 2.6 mmol/L.",
        },
        key_questions=("onset", "thirst", "urinary_symptoms", "family_history"),
        red_flags=("vomiting", "confusion", "weight_change"),
        key_tests=("hba1c", "glucose", "urinalysis"),
        plan=(
            ("metformin",),
            ("diet", "lifestyle", "exercise", "weight loss", "education", "desmond"),
            ("repeat hba1c", "annual review", "foot check", "eye screening", "follow-up", "follow up", "review"),
        ),
        differential=(
            "type 1 diabetes",
            "diabetes insipidus",
            "hypercalcaemia",
            "urinary tract infection",
            "hyperthyroidism",
        ),
        ages=(35, 80),
    ),
    Condition(
        key="diabetic_ketoacidosis",
        name="diabetic ketoacidosis",
        synonyms=("DKA", "ketoacidosis"),
        specialty="endocrinology",
        complaint="being sick and feeling really unwell",
        hpi={
            "onset": ("It started yesterday morning.", "It came on over the last day and a half."),
            "timing": ("It's getting worse by the hour.",),
            "severity": ("I feel the worst I've ever felt.",),
            "prior_episodes": ("I ended up in hospital like this once when I was a teenager.",),
        },
        symptoms={
            "vomiting": ("I've been sick six or seven times.",),
            "abdominal_pain": ("My tummy aches all over.",),
            "thirst": ("I'm desperately thirsty.",),
            "urinary_symptoms": ("I'm peeing loads.",),
            "shortness_of_breath": ("I'm breathing fast and deep.",),
        },
        optional_symptoms={
            "confusion": ("I feel a bit muddled.",),
            "fatigue": ("I'm really drowsy.",),
        },
        history={
            "past_medical_history": ("I've had type 1 diabetes since I was twelve.",),
            "medications": (
                "I ran out of my insulin three days ago and haven't taken any since.",
                "I've been skipping my insulin injections for the past few days.",
            ),
        },
        sensitive=("medications",),
        tests={
            "vital_signs": (
                "Temperature 37.1 C, heart rate 122/min, blood pressure 98/60 mmHg, respiratory rate 30/min "
                "(deep, sighing breaths), SpO2 99% on room air."
            ),
            "general_exam": "Drowsy but rousable; dry mucous membranes; ketotic breath; capillary refill 3 s.",
            "glucose": "Capillary blood glucose 28.4 mmol/L; blood ketones 5.8 mmol/L.",
            "abg": "Venous pH 7.08, pCO2 2.6 kPa, HCO3 8 mmol/L, lactate 2.1 mmol/L.",
            "electrolytes": "Sodium 131, potassium 5.6 mmol/L, urea 12.4 mmol/L, creatinine 142 umol/L.",
            "urinalysis": "Urine dipstick: glucose 4+, ketones 3+; no leukocytes or nitrites.",
        },
        key_questions=("medications", "past_medical_history", "vomiting", "thirst"),
        red_flags=("confusion", "fever"),
        key_tests=("glucose", "abg", "electrolytes", "vital_signs"),
        plan=(
            (
                "insulin infusion",
                "fixed-rate insulin",
                "fixed rate insulin",
                "intravenous insulin",
                "iv insulin",
                "insulin",
            ),
            ("intravenous fluids", "iv fluids", "fluid resuscitation", "saline", "potassium"),
            ("hospital", "admit", "admission", "emergency", "high dependency"),
        ),
        harmful=(("send you home", "go home and rest"),),
        differential=(
            "hyperosmolar hyperglycaemic state",
            "gastroenteritis",
            "acute pancreatitis",
            "sepsis",
            "alcoholic ketoacidosis",
        ),
        ages=(16, 40),
    ),
    Condition(
        key="hypothyroidism",
        name="primary hypothyroidism",
        synonyms=(
            "hypothyroidism",
            "underactive thyroid",
            "hypothyroid",
            "Hashimoto's thyroiditis",
            "Hashimoto's disease",
            "autoimmune hypothyroidism",
            "myxoedema",
        ),
        specialty="endocrinology",
        complaint="feeling tired and sluggish all the time",
        hpi={
            "onset": ("It's been coming on gradually over about six months.", "It crept up on me over most of a year."),
            "character": ("It's a heavy, slowed-down feeling, like wading through treacle.",),
            "timing": ("It's there all day, every day.",),
            "relieving": ("Sleeping more doesn't help at all.",),
        },
        symptoms={
            "fatigue": ("I'm exhausted however much I sleep.",),
            "temperature_intolerance": ("I feel the cold much more than everyone else.",),
            "weight_change": ("I've put on about six kilos without eating more.",),
            "constipation": ("I've become constipated.",),
        },
        optional_symptoms={
            "low_mood": ("I've been feeling low.",),
            "itching": ("My skin has gone dry and itchy.",),
            "muscle_aches": ("My muscles ache and feel stiff.",),
        },
        history={
            "family_history": ("My mother and my sister both take thyroid tablets.",),
            "past_medical_history": ("I have some pale patches on my skin, but I'm otherwise well.",),
        },
        tests={
            "vital_signs": (
                "Temperature 36.1 C, heart rate 54/min, blood pressure 138/88 mmHg, respiratory rate 14/min, "
                "SpO2 98% on room air."
            ),
            "neck_exam": "Diffusely enlarged, firm, non-tender thyroid; no nodules; no lymphadenopathy.",
            "tsh": "TSH 38.5 mU/L, free T4 6.2 pmol/L (low).",
            "lipids": "Total cholesterol 6.7 mmol/L, LDL 4.4 mmol/L, HDL 1.2 mmol/L.",
            "autoantibodies": "ANA and rheumatoid factor negative; thyroid peroxidase antibodies 650 IU/mL (positive).",
        },
        key_questions=("fatigue", "weight_change", "temperature_intolerance", "family_history"),
        red_flags=("confusion", "dysphagia"),
        key_tests=("tsh", "neck_exam"),
        plan=(
            ("levothyroxine", "thyroxine", "thyroid hormone replacement"),
            ("repeat tsh", "recheck", "6 weeks", "six weeks", "follow-up", "follow up", "review"),
        ),
        differential=(
            "depression",
            "iron deficiency anaemia",
            "obstructive sleep apnoea",
            "chronic fatigue syndrome",
            "type 2 diabetes",
        ),
        ages=(25, 80),
    ),
    Condition(
        key="hyperthyroidism",
        name="Graves' disease",
        synonyms=(
            "Graves disease",
            "Graves",
            "hyperthyroidism",
            "overactive thyroid",
            "thyrotoxicosis",
            "hyperthyroid",
        ),
        specialty="endocrinology",
        complaint="losing weight and feeling jittery",
        hpi={
            "onset": ("It's been building up over the last three months.", "It started about four months ago."),
            "character": ("It's a shaky, restless, buzzing feeling.",),
            "timing": ("It's there all the time and getting worse.",),
            "prior_episodes": ("I've never felt like this before.",),
        },
        symptoms={
            "weight_change": ("I've lost about seven kilos without trying.",),
            "appetite": ("I'm eating much more than usual.", "I'm hungry all the time."),
            "palpitations": ("My heart pounds and races, even when I'm sitting down.",),
            "temperature_intolerance": ("I can't stand the heat; I'm sweating when everyone else is fine.",),
            "anxiety": ("I feel anxious and irritable.",),
        },
        optional_symptoms={
            "diarrhea": ("I'm opening my bowels more often, and it's loose.",),
            "vision_changes": ("My eyes feel gritty and sometimes I see double.",),
            "sleep": ("I can't get to sleep.",),
        },
        history={
            "family_history": ("My aunt has a thyroid problem.",),
            "smoking": ("I smoke ten a day.", "I've never smoked."),
            "past_medical_history": ("I'm usually well.",),
        },
        tests={
            "vital_signs": (
                "Temperature 37.3 C, heart rate 112/min, blood pressure 142/70 mmHg, respiratory rate 16/min, "
                "SpO2 99% on room air."
            ),
            "general_exam": "Fine tremor of the outstretched hands; warm, sweaty palms.",
            "neck_exam": "Diffuse smooth goitre with a bruit; no nodules.",
            "eye_exam": "Lid retraction and lid lag; mild proptosis of both eyes; acuity 6/6.",
            "tsh": "TSH <0.01 mU/L, free T4 48 pmol/L (high).",
            "autoantibodies": "TSH receptor antibodies positive (12 IU/L).",
            "ecg": "Sinus tachycardia 112/min; no other abnormality.",
        },
        key_questions=("weight_change", "palpitations", "temperature_intolerance", "family_history"),
        red_flags=("chest_pain", "vision_changes"),
        key_tests=("tsh", "vital_signs", "neck_exam"),
        plan=(
            ("carbimazole", "propylthiouracil", "antithyroid", "anti-thyroid"),
            ("propranolol", "beta blocker", "beta-blocker"),
            ("endocrinology", "endocrinologist", "specialist", "follow-up", "follow up", "review"),
        ),
        differential=(
            "toxic multinodular goitre",
            "thyroiditis",
            "anxiety disorder",
            "atrial fibrillation",
            "phaeochromocytoma",
        ),
        ages=(20, 60),
    ),
    # ------------------------------------------------------------------ haematology
    Condition(
        key="iron_deficiency_anaemia",
        name="iron deficiency anaemia",
        synonyms=("iron deficiency anemia", "IDA", "anaemia", "anemia", "iron deficiency", "microcytic anaemia"),
        specialty="haematology",
        complaint="feeling tired and washed out",
        hpi={
            "onset": ("It's been coming on slowly over about four months.", "It started maybe half a year ago."),
            "timing": ("It's there every day and it's been getting worse.",),
            "aggravating": ("Walking up hills or stairs wipes me out.",),
            "severity": ("I've had to give up going to the gym.",),
        },
        symptoms={
            "fatigue": ("I'm tired all the time.",),
            "shortness_of_breath": ("I get puffed out on the stairs.",),
            "dizziness": ("I feel lightheaded when I stand up quickly.",),
        },
        optional_symptoms={
            "headache": ("I get headaches more often.",),
            "palpitations": ("Sometimes I notice my heart pounding.",),
            "appetite": ("I've been craving ice to chew.",),
        },
        history={
            "menstrual_history": (
                "My periods are very heavy, with clots, and I flood through pads.",
                "My periods last eight days and I have to change pads every hour on the heaviest days.",
            ),
        },
        tests={
            "vital_signs": (
                "Temperature 36.7 C, heart rate 98/min, blood pressure 112/68 mmHg, respiratory rate 16/min, "
                "SpO2 99% on room air."
            ),
            "general_exam": "Pale conjunctivae and palmar creases; angular cheilitis; spoon-shaped nails.",
            "cbc": "Haemoglobin 84 g/L, MCV 68 fL, white cells 6.8 x10^9/L, platelets 420 x10^9/L.",
            "iron_studies": "Ferritin 4 ug/L; transferrin saturation 6%; B12 and folate normal.",
        },
        key_questions=("menstrual_history", "fatigue", "shortness_of_breath"),
        red_flags=("blood_in_stool", "weight_change"),
        key_tests=("cbc", "iron_studies"),
        plan=(
            ("iron tablets", "ferrous sulfate", "ferrous sulphate", "ferrous fumarate", "oral iron", "iron supplement"),
            ("gynaecology", "gynecology", "heavy periods", "tranexamic acid", "mirena", "hormonal coil"),
            ("repeat blood count", "repeat fbc", "recheck", "follow-up", "follow up", "review"),
        ),
        differential=(
            "thalassaemia trait",
            "coeliac disease",
            "hypothyroidism",
            "anaemia of chronic disease",
            "depression",
        ),
        sexes=("female",),
        ages=(18, 50),
    ),
    # ------------------------------------------------------------------ renal and urology
    Condition(
        key="cystitis",
        name="uncomplicated lower urinary tract infection",
        synonyms=(
            "cystitis",
            "acute cystitis",
            "urinary tract infection",
            "UTI",
            "lower UTI",
            "bladder infection",
            "lower urinary tract infection",
            "water infection",
        ),
        specialty="general practice",
        complaint="burning when I pee",
        hpi={
            "onset": ("It started two days ago.", "It began yesterday morning."),
            "character": ("It's a stinging, burning feeling.",),
            "timing": ("It's been constant since it started.",),
            "prior_episodes": ("I had something similar about a year ago that cleared up with tablets.",),
        },
        symptoms={
            "urinary_symptoms": ("I'm rushing to the toilet every half hour and only a little comes out.",),
            "abdominal_pain": ("I've got an ache low down in my belly.",),
        },
        optional_symptoms={
            "hematuria": ("My pee looked a bit pink once.",),
        },
        history={
            "sexual_history": (
                "I've started seeing a new partner recently.",
                "I've been having sex with a new boyfriend for the past few weeks.",
            ),
            "menstrual_history": ("My last period was two weeks ago, on time.",),
        },
        sensitive=("sexual_history",),
        tests={
            "vital_signs": (
                "Temperature 37.2 C, heart rate 84/min, blood pressure 118/74 mmHg, respiratory rate 14/min, "
                "SpO2 99% on room air."
            ),
            "abdominal_exam": "Mild suprapubic tenderness; no renal angle tenderness; no masses.",
            "urinalysis": "Urine dipstick: leukocytes 3+, nitrites positive, blood 1+; no glucose.",
            "urine_culture": "E. coli >10^5 CFU/mL, sensitive to nitrofurantoin and trimethoprim.",
        },
        key_questions=("onset", "urinary_symptoms", "vaginal_symptoms", "menstrual_history"),
        red_flags=("fever", "back_pain", "vomiting"),
        key_tests=("urinalysis", "urine_culture"),
        plan=(
            ("nitrofurantoin", "trimethoprim", "pivmecillinam", "fosfomycin", "antibiotic"),
            ("fluids", "drink plenty", "paracetamol", "ibuprofen"),
            ("fever", "back pain", "loin pain", *_FOLLOW_UP),
        ),
        differential=(
            "pyelonephritis",
            "sexually transmitted infection",
            "vaginal thrush",
            "interstitial cystitis",
            "kidney stone",
        ),
        sexes=("female",),
        ages=(16, 45),
    ),
    Condition(
        key="pyelonephritis",
        name="acute pyelonephritis",
        synonyms=(
            "pyelonephritis",
            "kidney infection",
            "upper urinary tract infection",
            "upper UTI",
            "renal infection",
        ),
        specialty="general medicine",
        complaint="a high temperature and pain in my side",
        hpi={
            "onset": ("It started yesterday.", "It came on over the last two days."),
            "character": ("It's a deep, constant ache.",),
            "location": ("It's on my right side, in my back just under the ribs.",),
            "radiation": ("It goes round towards the front a bit.",),
            "severity": ("It's about seven out of ten.",),
        },
        symptoms={
            "fever": ("I've had a high temperature with shaking chills.",),
            "back_pain": ("My back hurts on the right.",),
            "urinary_symptoms": ("It burns when I pee and I keep needing to go.",),
            "nausea": ("I feel sick.",),
        },
        optional_symptoms={
            "vomiting": ("I've been sick twice.",),
            "appetite": ("I've gone off my food.",),
        },
        history={
            "past_medical_history": ("I've had a couple of bladder infections in the past.",),
            "menstrual_history": ("My last period was a week ago.",),
        },
        tests={
            "vital_signs": (
                "Temperature 39.1 C, heart rate 112/min, blood pressure 112/70 mmHg, respiratory rate 20/min, "
                "SpO2 98% on room air."
            ),
            "abdominal_exam": "Right renal angle tenderness; mild right flank tenderness; no guarding.",
            "urinalysis": "Urine dipstick: leukocytes 3+, nitrites positive, blood 2+, protein 1+.",
            "urine_culture": (
                "E. coli >10^5 CFU/mL, sensitive to co-amoxiclav and ciprofloxacin; resistant to trimethoprim."
            ),
            "cbc": "White cells 17.2 x10^9/L with neutrophilia; haemoglobin 128 g/L; platelets 290 x10^9/L.",
            "crp": "CRP 156 mg/L.",
            "blood_culture": "Escherichia coli isolated at 18 hours.",
        },
        key_questions=("location", "fever", "urinary_symptoms", "menstrual_history"),
        red_flags=("vomiting", "confusion"),
        key_tests=("vital_signs", "urinalysis", "urine_culture"),
        plan=(
            ("antibiotic", "cefalexin", "co-amoxiclav", "ciprofloxacin", "ceftriaxone", "gentamicin"),
            ("admit", "hospital", "iv fluids", "intravenous", *_FOLLOW_UP),
        ),
        harmful=(("nitrofurantoin",),),
        differential=(
            "renal colic",
            "cystitis",
            "acute appendicitis",
            "pelvic inflammatory disease",
            "ectopic pregnancy",
        ),
        sexes=("female",),
        ages=(18, 45),
    ),
    Condition(
        key="renal_colic",
        name="renal colic",
        synonyms=(
            "kidney stone",
            "kidney stones",
            "ureteric colic",
            "ureteric stone",
            "renal stone",
            "nephrolithiasis",
            "urolithiasis",
            "ureterolithiasis",
        ),
        specialty="urology",
        complaint="terrible pain in my side that comes in waves",
        hpi={
            "onset": ("It started suddenly about three hours ago.", "It came on out of nowhere early this morning."),
            "character": ("It's a sharp, gripping pain that comes in waves.",),
            "location": ("It's in my left side, in my back below the ribs.",),
            "radiation": ("It shoots down into my groin.",),
            "severity": ("It's ten out of ten, the worst pain I've ever had.",),
            "prior_episodes": ("I had a similar pain three years ago that passed on its own.",),
        },
        symptoms={
            "nausea": ("I feel very sick.",),
            "back_pain": ("My back hurts on the left.",),
        },
        optional_symptoms={
            "vomiting": ("I've been sick twice.",),
            "hematuria": ("My pee looked pinkish.",),
            "urinary_symptoms": ("I keep feeling I need to pee.",),
        },
        history={
            "occupation": ("I'm a roofer, working outside all day.", "I drive a delivery van all day."),
            "past_medical_history": ("I'm normally fit and well.",),
        },
        tests={
            "vital_signs": (
                "Temperature 36.9 C, heart rate 104/min, blood pressure 146/88 mmHg, respiratory rate 20/min, "
                "SpO2 99% on room air."
            ),
            "abdominal_exam": "Left renal angle tenderness; abdomen soft with no guarding; unable to lie still.",
            "urinalysis": "Urine dipstick: blood 3+; no leukocytes or nitrites.",
            "abdominal_ultrasound": "Mild left hydronephrosis; no renal mass.",
            "ct_abdomen": "CT KUB: 5 mm calculus at the left vesicoureteric junction with mild left hydronephrosis.",
        },
        key_questions=("onset", "character", "radiation", "prior_episodes"),
        red_flags=("fever", "syncope"),
        key_tests=("urinalysis", "ct_abdomen", "vital_signs"),
        plan=(
            ("diclofenac", "nsaid", "anti-inflammatory", "ibuprofen", "analgesia", "painkiller", "pain relief"),
            ("tamsulosin", "alpha blocker", "alpha-blocker", "urology", "urologist"),
            ("strain your urine", "fever", *_FOLLOW_UP),
        ),
        differential=(
            "pyelonephritis",
            "abdominal aortic aneurysm",
            "acute appendicitis",
            "biliary colic",
            "musculoskeletal back pain",
        ),
        ages=(20, 65),
    ),
)
